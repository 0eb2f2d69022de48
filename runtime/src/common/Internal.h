//===- Internal.h - GradComm runtime internals ------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Shared by every runtime source file; never installed.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_INTERNAL_H
#define GRADCOMM_RUNTIME_INTERNAL_H

#include "CudaBackendTable.h"
#include "IndexCoding.h"
#include "Transport.h"
#include "gradcomm/runtime.h"

#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

/// A communicating group (runtime.h's gradcomm_group): every rank of the
/// job, or the ranks that share this rank's coordinates on the grid axes
/// outside a set of axes (src/common/Group.cpp).
struct gradcomm_group_s {
  /// How the group's ranks reach each other (nullptr until initialized).
  std::unique_ptr<gradcomm::Transport> transport;
  int rank = 0;
  int size = 1;
  /// Collective calls that joined the agreement in this group.
  uint64_t sequence = 0;
  /// "the group over axes [0] of grid 2x2" (empty for every rank), for
  /// messages.
  std::string label;
  /// The split that made it (Transport::split's color and key), so a backend
  /// selected later can make its own communicator for the same ranks.
  int color = 0;
  int key = 0;
  /// The selected backend's communicator for the group (the CUDA
  /// backend's NCCL one; nullptr on the CPU and for every rank).
  void *backendGroup = nullptr;
  /// sameNode[r] != 0: rank r of the group runs on this rank's node, as the
  /// transport maps nodes. Empty until mapNodes.
  std::vector<uint8_t> sameNode;
};

namespace gradcomm {

class Backend;

/// Memory owned through the backend that allocated it (released there).
class BackendMemory {
public:
  BackendMemory() = default;
  BackendMemory(const Backend *owner, float *data)
      : owner(owner), pointer(data) {}
  BackendMemory(BackendMemory &&other) noexcept
      : owner(other.owner), pointer(other.pointer) {
    other.pointer = nullptr;
  }
  BackendMemory &operator=(BackendMemory &&other) noexcept {
    if (this != &other) {
      reset();
      owner = other.owner;
      pointer = other.pointer;
      other.pointer = nullptr;
    }
    return *this;
  }
  BackendMemory(const BackendMemory &) = delete;
  BackendMemory &operator=(const BackendMemory &) = delete;
  ~BackendMemory() { reset(); }

  float *data() const { return pointer; }
  /// Releases the memory (src/common/Backend.cpp).
  void reset();
  /// Exchanges the two buffers (of one backend), moving no data.
  void swap(BackendMemory &other) noexcept {
    std::swap(owner, other.owner);
    std::swap(pointer, other.pointer);
  }

private:
  const Backend *owner = nullptr;
  float *pointer = nullptr;
};

/// Named persistent state of one rank. Its memory lives where the backend
/// that was selected when it was made keeps tensors (host memory on the
/// CPU; device memory on CUDA, staged through the host for checkpoints).
struct State {
  /// Elements of the memory; 0 for a counter-only state.
  int64_t count = 0;
  uint64_t step = 0;
  BackendMemory memory;
  float *data() const { return memory.data(); }
  /// Per-state scratch, reused across steps so the hot path does not
  /// allocate: leader indices and this rank's k values.
  std::vector<int64_t> indices;
  std::vector<float> values;
  /// gradcomm_scalecom_recipe_f32's scratch: the clipped gradient or
  /// Nesterov's communicated velocity.
  std::vector<float> recipeInput;
  /// A velocity state's u' of the step under way, on the host: written by
  /// recipeInput, swapped with `memory` when the step commits, so the
  /// commit moves no data and a step that fails or is skipped leaves the
  /// velocity as it was (reserveNextVelocity allocates it).
  BackendMemory nextVelocity;
  /// The same on a device backend, allocated there at first use.
  BackendMemory deviceRecipeInput;
  BackendMemory deviceRecipeVelocity;
  /// The unfused compress of this step was skipped by the non-finite
  /// policy: the memory update that follows leaves memory and step alone.
  bool skippedStep = false;
  /// A started ScaleCom (gradcomm_scalecom_start_f32) holds `indices` and
  /// `values` until its wait.
  bool inFlight = false;
};

/// The process-wide runtime state: which communicator, who owns MPI, the
/// state registry and the counters.
struct Context {
  bool initialized = false;
  /// True when the runtime called MPI_Init and so must call MPI_Finalize.
  bool ownsMpi = false;
  /// The active group's transport, this rank's index in it and its size
  /// (with `sequence` below, copied in by activateGroup): every collective
  /// communicates here.
  gradcomm::Transport *transport = nullptr;
  int rank = 0;
  int size = 1;
  /// Every rank of the job (the communicator the runtime was bound to).
  gradcomm_group_s world;
  /// The group gradcomm_group_use selected; nullptr: `world`.
  gradcomm_group_s *active = nullptr;
  /// Groups made by gradcomm_group_from_grid, by canonical spec ("2x2:0").
  std::map<std::string, std::unique_ptr<gradcomm_group_s>> groups;
  bool consistencyCheck = true;
  gradcomm_nonfinite_policy nonFinitePolicy = GRADCOMM_NONFINITE_ERROR;
  /// The first failure of a compiled step's runtime calls
  /// (gradcomm_take_step_status).
  gradcomm_status pendingStepStatus = GRADCOMM_OK;
  /// The watchdog's limit for one wait, in seconds (0: off).
  double timeoutSeconds = 600.0;
  gradcomm_backend backend = GRADCOMM_BACKEND_CPU;
  /// The loaded CUDA backend's table while it runs.
  const CudaBackendTable *cuda = nullptr;
  /// The selected backend's operations (nullptr: the CPU backend's).
  const Backend *selected = nullptr;
  /// Handles a trainer handed in for the CUDA backend (runtime_cuda.h).
  void *ncclComm = nullptr;
  void *cudaStream = nullptr;
  std::map<std::string, State> states;
  std::map<std::string, gradcomm_op_stats> stats;
  /// Collective calls that joined the agreement on this rank: ranks that
  /// disagree on it issued calls in different orders.
  uint64_t sequence = 0;
  /// The checkpoint generation last saved or restored.
  uint64_t generation = 0;
  /// Started calls not yet waited for (gradcomm_wait).
  int64_t requestsInFlight = 0;
};

Context &context();

class Call;
/// What the modules above the core (Internal.h, Context, groups, the
/// agreement, states) contribute to it. Each registers its part before main
/// (a namespace-scope initializer in its own file), so the core calls them
/// without depending on them and the runtime's modules depend one way:
/// kernels <- transport <- common <- cpu <- ops <- bootstrap.
struct Extensions {
  /// The CPU backend (src/cpu): the backend until another is selected.
  const Backend *hostBackend = nullptr;
  /// Starts the runtime when an entry point is called before any init
  /// (src/bootstrap: MPI on MPI_COMM_WORLD).
  gradcomm_status (*initializeByDefault)(const Call &call) = nullptr;
  /// Frees the asynchronous ops' one-sided windows, collectively, in name
  /// order (src/ops/AsynchronousExchange.cpp).
  void (*releaseWindows)() = nullptr;
  /// Refreshes `state` from its asynchronous EASGD center (rank 0's
  /// window) when it has one, so reads and checkpoints see the current
  /// center.
  gradcomm_status (*refreshState)(const Call &call, const std::string &name,
                                  State &state) = nullptr;
};

/// The one registry (constant-initialized: safe to fill before main).
Extensions &extensions();

/// Binds the runtime to `world`, the transport over every rank of the job
/// (the MPI transport over the trainer's communicator, or another, such as
/// the unit tests' double); `ownsMpi`: the runtime initialized MPI and
/// finalizes it. Reads the environment's settings.
gradcomm_status bindWorld(const Call &call, std::unique_ptr<Transport> world,
                          bool ownsMpi);

/// Frees what the runtime holds (windows, groups' transports, the CUDA
/// backend, every state) and forgets the world: the runtime is
/// uninitialized again. Collective.
void releaseRuntime();

/// GRADCOMM_BACKEND=cpu|cuda picks the backend once the world is bound.
gradcomm_status backendFromEnvironment(const Call &call);

/// Makes `group` (nullptr: every rank) the one collectives communicate in:
/// copies its communicator, rank, size and sequence into the context and
/// keeps the previous group's sequence.
void activateGroup(gradcomm_group_s *group);

/// `group` is the active group for the scope, the previous one after.
class GroupScope {
public:
  explicit GroupScope(gradcomm_group_s *group) : saved(context().active) {
    activateGroup(group);
  }
  ~GroupScope() { activateGroup(saved); }
  GroupScope(const GroupScope &) = delete;
  GroupScope &operator=(const GroupScope &) = delete;

private:
  gradcomm_group_s *saved;
};

/// For the job-wide calls (checkpoints, counters' dump, backend): every
/// rank is the active group for the scope.
class WorldScope : public GroupScope {
public:
  WorldScope() : GroupScope(nullptr) {}
};

/// "the group over axes [0] of grid 2x2", or "every rank" for nullptr.
std::string groupLabel(const gradcomm_group_s *group);

/// Frees the groups' own communicators (collective in each group), in spec
/// order, and forgets them.
void releaseGroups();

class Call;
/// The selected backend's communicator for `group` (Backend::splitGroup),
/// agreed on by every rank; made when the group is made, or for every
/// group when the CUDA backend starts after them.
gradcomm_status splitBackendGroup(const Call &call, gradcomm_group_s &group);

/// Maps which ranks of the active group share this rank's node, once per
/// group. Collective in the group: call it where every rank of the group
/// is known to be in the same call (after an agreement).
gradcomm_status mapNodes(const Call &call);

/// True when `rank` of the active group runs on this rank's node (false
/// before mapNodes).
bool sharesNode(int rank);

} // namespace gradcomm

namespace gradcomm {
class Call;
} // namespace gradcomm

/// A started call (runtime.h's gradcomm_request): its transfers and what
/// gradcomm_wait still has to do once they completed.
struct gradcomm_request_s {
  std::string opName;
  /// The transfers, started on `transport` (the group active at the start;
  /// the wait may run while another group is active).
  gradcomm::Transport *transport = nullptr;
  std::vector<gradcomm::Transfer> transfers;
  /// Runs once every request completed (the average, the scatter, the
  /// counters); not when the call was skipped by the non-finite policy.
  std::function<void()> finish;
  /// Runs whatever happens to the wait (frees what the call holds; add to
  /// it with alsoRelease).
  std::function<void()> release;
  /// Work that is not a transfer (a device stream's): the wait polls
  /// it, under the watchdog, until it sets `*finished`.
  std::function<gradcomm_status(const gradcomm::Call &, bool *finished)> poll;
  /// The non-finite policy skipped it: nothing was sent.
  bool skipped = false;
  /// What the requests are and whom they wait for (-1: the group), for
  /// the watchdog's message.
  const char *what = "all-reduce (started)";
  int peer = -1;
  ~gradcomm_request_s() {
    if (release)
      release();
  }
};

namespace gradcomm {

/// One entry-point call: knows what to put in an error message.
class Call {
public:
  /// `world`: the group the call runs in when it is not the runtime's
  /// (the simulated learners, ops/Learners.cpp), named in messages in
  /// place of this rank.
  Call(const char *operation, const char *opName, const char *world = nullptr)
      : operation(operation), opName(opName ? opName : ""), world(world) {}

  /// Records "gradcomm: <operation> '<op>' on rank r of n: <cause>" as the
  /// last error and returns `status`.
  gradcomm_status fail(gradcomm_status status, const std::string &cause) const;

  /// Translates an MPI return code; `what` names the MPI call (the MPI
  /// transport's own set-up).
  gradcomm_status mpi(int mpiError, const char *what) const;

  /// Translates a return code of the call `what` ("all-reduce
  /// (agreement)") of `source`, a transport or one of its windows:
  /// GRADCOMM_ERR_MPI naming the transport and its cause.
  gradcomm_status transport(const ErrorSource &source, int error,
                            const char *what) const;

  /// Initializes the runtime on MPI_COMM_WORLD if nothing has yet.
  gradcomm_status ensureInitialized() const;

  /// Records `message` (another rank's, already formatted) as the last
  /// error and returns `status`.
  gradcomm_status adopt(gradcomm_status status,
                        const std::string &message) const;

  const char *name() const { return opName; }
  const char *operationName() const { return operation; }

  /// The states lookupState created in this call: removed again if the
  /// ranks do not agree, so a refused call leaves no trace.
  mutable std::vector<std::string> createdStates;

private:
  const char *operation;
  const char *opName;
  const char *world;
};

/// Runs `body(call)` and turns any C++ exception into a status, so nothing
/// unwinds through the C ABI. `world`: Call's.
template <typename Body>
gradcomm_status guarded(const char *operation, const char *opName, Body &&body,
                        const char *world = nullptr) {
  Call call(operation, opName, world);
  try {
    return body(call);
  } catch (const std::bad_alloc &) {
    return call.fail(GRADCOMM_ERR_NO_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return call.fail(GRADCOMM_ERR_INTERNAL, e.what());
  }
}

/// Looks up state `name`, declaring it with `count` elements on first use.
/// Fails (GRADCOMM_ERR_STATE) if it exists with another count.
gradcomm_status lookupState(const Call &call, const char *name, int64_t count,
                            State *&state);

/// data[i] /= n (the group's size) on the host: the mean of an all-reduced
/// sum. Divided, not multiplied by 1/n, so the result is the correctly
/// rounded mean, as a reference computes it.
void divideByGroupSize(float *data, int64_t count);
/// The same for a group of `size` that is not the active one.
void divideBySize(float *data, int64_t count, int size);

/// FNV-1a 64 of `size` bytes, continuing from `hash` (a running checksum
/// passes its last value): checkpoint checksums and the agreement's hashes.
inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
uint64_t fnv1a(const void *data, size_t size, uint64_t hash = kFnvOffsetBasis);

/// lookupState for a call that will use the state: also fails
/// (GRADCOMM_ERR_STATE) while a started call holds it.
gradcomm_status lookupIdleState(const Call &call, const char *name,
                                int64_t count, State *&state);

/// Frees every state (their memory goes back to the backend that made it)
/// and shuts the CUDA backend down when it runs.
void releaseCudaBackend();

/// The CUDA backend's operations over the loaded library's `table`
/// (src/common/CudaBackendAdapter.cpp); `table` nullptr: it stopped, and memory
/// it made is no longer released.
const Backend *cudaBackendOver(const CudaBackendTable *table);

/// One value the ranks of a collective must agree on.
struct CheckField {
  const char *name;
  int64_t value;
};

/// The agreement (the consistency check): when enabled, one all-reduce per
/// collective call carries this rank's local status, the operation, the
/// op/state name, the call's sequence number, `fields` and whether the
/// gradient is finite. Every rank then returns the same result with the
/// same message: the lowest failing rank's own error (broadcast), else
/// GRADCOMM_ERR_MISMATCH when any of those differs across ranks, else
/// GRADCOMM_ERR_NON_FINITE when any rank saw NaN/Inf, else OK. Nothing an
/// entry point creates before it (a new state) survives a failure. When
/// disabled, returns `local` without communicating.
/// Bytes one rank may share with the others inside the agreement's message
/// (AgreementPayload): 32 int64 slots, always sent, so the message has the
/// same size on every rank whatever the call.
inline constexpr size_t kAgreementPayloadBytes = 256;

/// What one rank (`root`) shares in the agreement's message: `bytes` (at
/// most kAgreementPayloadBytes) from `send` on the root land in `receive`
/// on every rank, the root included, when the ranks agree. The ScaleCom
/// leader's indices travel this way when they fit, instead of in a
/// broadcast of their own.
struct AgreementPayload {
  int root;
  const void *send;
  size_t bytes;
  void *receive;
};

gradcomm_status checkConsistency(const Call &call,
                                 const std::vector<CheckField> &fields,
                                 bool localNonFinite,
                                 gradcomm_status local = GRADCOMM_OK,
                                 const AgreementPayload *payload = nullptr);

/// A known schedule, a power-of-two `size` for hypercube, and (when
/// `pairing`: the synchronous exchange) not the random schedule.
gradcomm_status validateSchedule(const Call &call, gradcomm_schedule schedule,
                                 int size, bool pairing);

/// Always communicates, whatever the consistency check's setting: every
/// rank returns OK, or the lowest failing rank's status and message. For
/// rare collective steps that must never leave a rank behind (starting a
/// backend).
gradcomm_status agreeOnStatus(const Call &call, gradcomm_status local);

/// Runs `validate()` (argument checks, state lookup: everything that can
/// fail on one rank alone). On a local failure this rank still joins the
/// agreement, so the others fail with its message instead of waiting for
/// it; the returned status is then that failure.
template <typename Validate>
gradcomm_status validateCollectively(const Call &call, Validate &&validate) {
  gradcomm_status local = validate();
  if (local == GRADCOMM_OK)
    return GRADCOMM_OK;
  return checkConsistency(call, {}, false, local);
}

/// checkConsistency for an operation whose input is one buffer: the
/// non-finite scan of `input` against `limit` (inputLimit) runs on the
/// selected backend (a device kernel on CUDA), only when
/// scanForNonFinite().
gradcomm_status checkConsistencyOfInput(const Call &call, const float *input,
                                        int64_t count, float limit,
                                        const std::vector<CheckField> &fields);

/// True when an entry point scans its input before communicating: the
/// consistency check is on and the policy is not propagate.
bool scanForNonFinite();

/// The largest magnitude an input may hold: FLT_MAX / (2 n) for what the n
/// ranks sum (so the sum cannot overflow, rounding included), FLT_MAX for
/// what is only mixed (gossip: a convex combination).
float inputLimit(bool summed);

/// Under GRADCOMM_NONFINITE_SKIP, turns the agreement's
/// GRADCOMM_ERR_NON_FINITE into a skipped call: counts it in `opName`'s
/// counters and returns true; the entry point then writes its output as if
/// every input were zero, changes no state and returns GRADCOMM_OK.
bool skippedNonFinite(gradcomm_status agreed, const char *opName);

/// Zeroes `count` floats at `data` on the selected backend (the output of a
/// skipped call).
gradcomm_status zeroBuffer(const Call &call, float *data, int64_t count);

/// The float's bits, for CheckField (equal bits, equal parameter).
int64_t floatBits(float value);

/// Counters of op `name`; created on first use.
gradcomm_op_stats &opStats(const char *name);

/// Byte cost models of the collectives (docs/runtime.md).
uint64_t allReduceBytes(uint64_t bytes, int size);
uint64_t broadcastBytes(uint64_t bytes, int size);
/// `bytes` is the whole buffer every rank holds.
uint64_t reduceScatterBytes(uint64_t bytes, int size);

/// The started forms, for the backend's Backend::starts.
enum class StartedForm {
  DenseAllReduce,
  Gossip,
  Scalecom,
  SparseAllReduce,
  LocalTopk,
  ElasticAverage,
  ReduceScatter,
};

/// The started forms' first checks: a request pointer (set to NULL) and a
/// backend that starts `form` (`blocking` names the form to use if not).
gradcomm_status requireStartable(const Call &call, gradcomm_request *request,
                                 StartedForm form, const char *blocking);

/// Adds `more` to what `request` frees when it is done.
void alsoRelease(gradcomm_request_s &request, std::function<void()> more);

/// Adds `more` after what `request` runs at its wait (a backend's part of
/// it may be empty).
void alsoFinish(gradcomm_request_s &request, std::function<void()> more);

/// Polls `test` (which sets its `*finished`) until it finishes, yielding
/// the core between polls, under the watchdog as waitYielding.
gradcomm_status
waitPolling(const Call &call,
            const std::function<gradcomm_status(const Call &, bool *)> &test,
            const char *what, int peer = -1);

/// Hands a started call to the caller as a gradcomm_request, counted in
/// Context::requestsInFlight until gradcomm_wait.
gradcomm_request trackRequest(std::unique_ptr<gradcomm_request_s> started);

/// GRADCOMM_ERR_STATE while started calls are not waited for: `what` (a
/// checkpoint restore, finalize) would pull their buffers from under them.
gradcomm_status requireNoRequestInFlight(const Call &call, const char *what);

/// The active group's transport (the runtime is initialized).
Transport &transport();

/// Collectives on counts above kTransportMaxCount, split into several
/// calls on the active group's transport.
gradcomm_status allReduceSum(const Call &call, float *data, int64_t count);
/// The same sum started: one all-reduce per chunk, appended to `transfers`
/// (wait for each with waitYielding).
gradcomm_status startAllReduceSum(const Call &call, float *data, int64_t count,
                                  std::vector<Transfer> &transfers);
/// The all-reduce of `count` `element`s at `data` (any count), started in
/// chunks into `transfers`; `what` names it in messages.
gradcomm_status startAllReduce(const Call &call, void *data, int64_t count,
                               Element element, Reduction reduction,
                               std::vector<Transfer> &transfers,
                               const char *what);
/// The same, completed (under the watchdog).
gradcomm_status allReduce(const Call &call, void *data, int64_t count,
                          Element element, Reduction reduction,
                          const char *what);
/// `count` elements of `element` at `data` from `root`, any count.
gradcomm_status broadcast(const Call &call, void *data, int64_t count,
                          Element element, int root, const char *what);
/// Rank r's `count` elements of `send` land at block r of `receive`.
gradcomm_status allGather(const Call &call, const void *send, int64_t count,
                          Element element, void *receive, const char *what);
/// Rank r receives in `receive` the sum (`reduction`) over the group of
/// block r of `send`, `counts[r]` elements, blocks in rank order; started
/// into `transfer` (each count at most kTransportMaxCount).
gradcomm_status startReduceScatter(const Call &call, const void *send,
                                   void *receive,
                                   const std::vector<int64_t> &counts,
                                   Element element, Reduction reduction,
                                   Transfer &transfer, const char *what);
/// allGather started into `transfer`.
gradcomm_status startAllGather(const Call &call, const void *send,
                               int64_t count, Element element, void *receive,
                               Transfer &transfer, const char *what);

/// mean = the mean over the ranks of `x` (sum, then divide by n): the
/// elastic averages' first center.
gradcomm_status meanOverRanks(const Call &call, const float *x, int64_t count,
                              float *mean);

/// Completes `transfer` (started on `on`), testing it and yielding the core
/// between tests (never busy-waiting for long: ranks may share cores).
/// After the watchdog's timeout it reports GRADCOMM_ERR_TIMEOUT naming
/// `what` and the peer (`peer`, or -1: the rest of the group) and aborts
/// the job.
gradcomm_status waitYielding(const Call &call, Transport &on,
                             Transfer &transfer, const char *what,
                             int peer = -1);
/// The same on the active group's transport.
gradcomm_status waitYielding(const Call &call, Transfer &transfer,
                             const char *what, int peer = -1);
/// Bytes per index on the wire for indices below `bound`: 4 or 8.
int indexBytes(int64_t bound);
/// Bytes per index on the wire for chunk selection (index j lies in chunk
/// j of `chunkSize` elements, so only its offset there travels): 1 for
/// chunks of at most 256, 2 for at most 65536, else indexBytes(bound).
int chunkIndexBytes(int64_t bound, int64_t chunkSize);

/// Broadcasts coding.k indices from `root`, encoded as encodeIndices does.
gradcomm_status broadcastIndices(const Call &call, int64_t *data, int root,
                                 const IndexCoding &coding);

/// The watchdog fired: records and prints GRADCOMM_ERR_TIMEOUT, aborts.
[[noreturn]] void timedOut(const Call &call, const char *what, int peer,
                           double seconds);

/// Prints `message` on stderr and ends the whole job with `code`
/// (through the world's transport when the runtime runs, else _Exit). It waits
/// a moment between the two: the launcher stops forwarding output once it sees
/// the abort, and the message is the one thing the user needs.
[[noreturn]] void abortJob(const char *message, int code);

/// Seconds since an arbitrary origin (a monotonic clock).
double now();

/// Validation helpers: each fails with GRADCOMM_ERR_INVALID_ARGUMENT and a
/// message naming the argument.
gradcomm_status requireName(const Call &call, const char *argument,
                            const char *value);
/// The arguments of the parameter exchanges (gossip, elastic averaging):
/// a state name, a replica of 1..`maxCount` elements, a period >= 1.
gradcomm_status requireReplica(const Call &call, const char *stateName,
                               const float *x, int64_t count, int64_t maxCount,
                               int64_t period);

/// A mixing weight in (0, 1).
gradcomm_status requireMixing(const Call &call, float mixing);

/// An elastic coefficient in (0, 1/n] (n alpha is the center's moving
/// rate), with a tolerance for alpha = beta / n rounded to float.
gradcomm_status requireElasticAlpha(const Call &call, float alpha);

gradcomm_status requirePointer(const Call &call, const char *argument,
                               const void *pointer);
gradcomm_status requireRange(const Call &call, const char *argument,
                             int64_t value, int64_t low, int64_t high);
gradcomm_status requireReduction(const Call &call,
                                 gradcomm_reduction reduction);
/// count in [1, 2^62] and k in [1, count]: every compressing entry point.
gradcomm_status requireCountAndK(const Call &call, int64_t count, int64_t k);

/// Returns early from an entry point on failure.
#define GRADCOMM_RETURN_IF_ERROR(expr)                                         \
  do {                                                                         \
    gradcomm_status gradcommStatus = (expr);                                   \
    if (gradcommStatus != GRADCOMM_OK)                                         \
      return gradcommStatus;                                                   \
  } while (false)

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_INTERNAL_H
