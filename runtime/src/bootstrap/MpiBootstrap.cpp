//===- MpiBootstrap.cpp - Starting and ending the runtime over MPI -------===//
//
// Part of the GradComm project.
//
// The runtime's public init and finalize calls: MPI initialized by the
// runtime (gradcomm_init; gradcomm_init_with_rendezvous through the PMI
// server) or handed in (gradcomm_init_with_comm), wrapped in the MPI
// transport and bound as the world (bindWorld); and the release of what
// the runtime holds in MPI whoever finalizes it.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "MpiTransport.h"
#include "PmiServer.h"
#include "UcxTuning.h"
#include "gradcomm/runtime_mpi.h"

using namespace gradcomm;

/// What gradcomm_finalize releases in MPI (windows, groups' communicators,
/// the CUDA backend's communicators), then the runtime's state. MPI itself
/// is left to its owner.
static void releaseMpiResources() { releaseRuntime(); }

/// MPI calls the delete callbacks of MPI_COMM_SELF's attributes first thing
/// in MPI_Finalize, while MPI still works (MPI-3.1 section 8.7.1): the
/// standard hook for a library to free its windows and communicators
/// whoever finalizes MPI. A trainer that owns MPI and never calls
/// gradcomm_finalize thus exits cleanly (UCX otherwise aborts in
/// ucp_cleanup over the open windows' keys). Every rank finalizes, so the
/// collective frees meet. After gradcomm_finalize there is nothing left.
/// The runtime defines no MPI_Finalize of its own (one would clash with
/// PMPI tools): the asynchronous ops' progress thread, which must be out
/// of MPI before MPI_Finalize starts, runs under a trainer's MPI only when
/// the trainer asks and then calls gradcomm_finalize first
/// (AsynchronousExchange.cpp, ProgressPump).
static int releaseAtMpiFinalize(MPI_Comm, int, void *, void *) {
  if (context().initialized)
    releaseMpiResources();
  return MPI_SUCCESS;
}

/// Registers releaseAtMpiFinalize once per process (MPI is initialized
/// once per process, and the callback sees the runtime of the moment).
static gradcomm_status releaseWhenMpiFinalizes(const Call &call) {
  static bool registered = false;
  if (registered)
    return GRADCOMM_OK;
  int keyval = MPI_KEYVAL_INVALID;
  GRADCOMM_RETURN_IF_ERROR(
      call.mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                      releaseAtMpiFinalize, &keyval, nullptr),
               "MPI_Comm_create_keyval"));
  GRADCOMM_RETURN_IF_ERROR(call.mpi(
      MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr), "MPI_Comm_set_attr"));
  registered = true;
  return GRADCOMM_OK;
}

/// Binds the runtime to `comm`. MPI errors must come back as codes, not
/// abort the job, so every message can name the op and the rank.
static gradcomm_status bind(const Call &call, MPI_Comm comm, bool ownsMpi) {
  GRADCOMM_RETURN_IF_ERROR(releaseWhenMpiFinalizes(call));
  std::unique_ptr<Transport> world;
  GRADCOMM_RETURN_IF_ERROR(
      call.mpi(MpiTransport::over(comm, /*owned=*/false, &world),
               "binding the communicator (MPI_Comm_set_errhandler, "
               "MPI_Comm_rank, MPI_Comm_size)"));
  return bindWorld(call, std::move(world), ownsMpi);
}

/// Initializes MPI if nothing has yet and binds the runtime to
/// MPI_COMM_WORLD: what an entry point called before any init does.
static gradcomm_status initializeOverMpiWorld(const Call &call) {
  int mpiInitialized = 0, mpiFinalized = 0;
  MPI_Initialized(&mpiInitialized);
  MPI_Finalized(&mpiFinalized);
  if (mpiFinalized)
    return call.fail(GRADCOMM_ERR_NOT_INITIALIZED,
                     "MPI has already been finalized");
  bool ownsMpi = false;
  if (!mpiInitialized) {
    int provided = 0;
    preferEagerUcxOverTcp();
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS)
      return call.fail(GRADCOMM_ERR_NOT_INITIALIZED, "MPI_Init_thread failed");
    ownsMpi = true;
  }
  GRADCOMM_RETURN_IF_ERROR(bind(call, MPI_COMM_WORLD, ownsMpi));
  return backendFromEnvironment(call);
}

[[maybe_unused]] static const bool registered =
    (extensions().initializeByDefault = initializeOverMpiWorld, true);

gradcomm_status gradcomm_init(void) {
  return guarded("init", nullptr, [](const Call &call) {
    return context().initialized ? GRADCOMM_OK : initializeOverMpiWorld(call);
  });
}

gradcomm_status
gradcomm_init_with_rendezvous(int rank, int size,
                              const gradcomm_rendezvous *rendezvous) {
  return guarded("init_with_rendezvous", nullptr, [&](const Call &call) {
    Context &ctx = context();
    if (ctx.initialized &&
        mpiCommunicatorOf(*ctx.world.transport) == MPI_COMM_WORLD &&
        ctx.world.rank == rank && ctx.world.size == size)
      return GRADCOMM_OK;
    if (size < 1 || rank < 0 || rank >= size)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + " is not a rank of the job");
    if (!rendezvous || !rendezvous->set || !rendezvous->get)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "the rendezvous or one of its functions is null");
    int mpiInitialized = 0;
    MPI_Initialized(&mpiInitialized);
    if (mpiInitialized || ctx.initialized)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "MPI is already initialized (by mpiexec's launch, the "
                       "trainer or an earlier call): use gradcomm_init");
    std::string error;
    if (!startPmiServer(rank, size, *rendezvous, error))
      return call.fail(GRADCOMM_ERR_NOT_INITIALIZED,
                       "could not start the rendezvous: " + error);
    int provided = 0;
    preferEagerUcxOverTcp();
    int initialized =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    clearPmiEnvironment();
    if (initialized != MPI_SUCCESS)
      return call.fail(GRADCOMM_ERR_NOT_INITIALIZED,
                       "MPI_Init_thread failed: " + pmiServerError());
    GRADCOMM_RETURN_IF_ERROR(bind(call, MPI_COMM_WORLD, /*ownsMpi=*/true));
    if (ctx.world.rank != rank || ctx.world.size != size)
      // An MPI without MPICH's process-manager protocol (the stub, another
      // MPI) starts as a singleton instead.
      return call.fail(GRADCOMM_ERR_NOT_INITIALIZED,
                       "MPI started as rank " + std::to_string(ctx.world.rank) +
                           " of " + std::to_string(ctx.world.size) +
                           ", not through the rendezvous: this MPI does not "
                           "speak MPICH's process-manager protocol");
    return backendFromEnvironment(call);
  });
}

gradcomm_status gradcomm_init_with_comm(MPI_Comm comm) {
  return guarded("init_with_comm", nullptr, [&](const Call &call) {
    Context &ctx = context();
    if (comm == MPI_COMM_NULL)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "communicator is MPI_COMM_NULL");
    int mpiInitialized = 0;
    MPI_Initialized(&mpiInitialized);
    if (!mpiInitialized)
      return call.fail(GRADCOMM_ERR_NOT_INITIALIZED,
                       "MPI must be initialized before handing in a "
                       "communicator");
    if (ctx.initialized) {
      int same = MPI_UNEQUAL;
      MPI_Comm bound = mpiCommunicatorOf(*ctx.world.transport);
      if (bound != MPI_COMM_NULL)
        GRADCOMM_RETURN_IF_ERROR(
            call.mpi(MPI_Comm_compare(bound, comm, &same), "MPI_Comm_compare"));
      if (same == MPI_IDENT)
        return GRADCOMM_OK;
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "already initialized on another communicator; call "
                       "gradcomm_finalize first");
    }
    GRADCOMM_RETURN_IF_ERROR(bind(call, comm, /*ownsMpi=*/false));
    return backendFromEnvironment(call);
  });
}

gradcomm_status gradcomm_finalize(void) {
  return guarded("finalize", nullptr, [](const Call &call) {
    Context &ctx = context();
    if (!ctx.initialized)
      return GRADCOMM_OK;
    GRADCOMM_RETURN_IF_ERROR(requireNoRequestInFlight(call, "finalizing"));
    bool ownsMpi = ctx.ownsMpi;
    releaseMpiResources();
    if (ownsMpi)
      return call.mpi(MPI_Finalize(), "MPI_Finalize");
    return GRADCOMM_OK;
  });
}
