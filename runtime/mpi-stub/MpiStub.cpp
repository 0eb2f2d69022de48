//===- MpiStub.cpp - A one-process MPI for machines without MPI -----------===//
//
// Part of the GradComm project.
//
// See include/mpi.h. A shared library, so the runtime, the CUDA backend and
// a test program see one "initialized" flag, as they would with MPICH.
//
//===----------------------------------------------------------------------===//

#include "mpi.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include <vector>

namespace {

bool initialized = false;
bool finalized = false;

/// Keyvals' delete callbacks, by keyval; MPI_COMM_SELF's attributes as
/// (keyval, value) in the order they were set.
std::vector<MPI_Comm_delete_attr_function *> deleteCallbacks;
struct Attribute {
  int keyval;
  void *value;
};
std::vector<Attribute> selfAttributes;
int threadLevel = MPI_THREAD_SINGLE;

size_t typeSize(MPI_Datatype type) { return static_cast<size_t>(type) / 16; }

/// The windows: handle i + 1 is windows[i] (null once freed).
std::vector<char *> windows;

char *windowBase(MPI_Win win) {
  return win >= 1 && static_cast<size_t>(win) <= windows.size()
             ? windows[win - 1]
             : nullptr;
}

/// out[i] = out[i] + in[i] for floats, or a copy (the sum over one rank).
int accumulate(const void *origin, int count, MPI_Datatype type, char *target,
               MPI_Op op) {
  if (op == MPI_NO_OP)
    return MPI_SUCCESS;
  if (op == MPI_REPLACE) {
    std::memcpy(target, origin, typeSize(type) * static_cast<size_t>(count));
    return MPI_SUCCESS;
  }
  if (op == MPI_SUM && type == MPI_FLOAT) {
    float *out = reinterpret_cast<float *>(target);
    const float *in = static_cast<const float *>(origin);
    for (int i = 0; i < count; ++i)
      out[i] = out[i] + in[i];
    return MPI_SUCCESS;
  }
  return MPI_ERR_ARG;
}

bool validComm(MPI_Comm comm) { return comm != MPI_COMM_NULL; }

/// A collective over one rank: the receive buffer gets the send buffer.
int copy(const void *send, void *recv, int count, MPI_Datatype type) {
  if (count < 0 || typeSize(type) == 0)
    return MPI_ERR_ARG;
  if (send != MPI_IN_PLACE && send != recv && count > 0)
    std::memmove(recv, send, typeSize(type) * static_cast<size_t>(count));
  return MPI_SUCCESS;
}

int completed(MPI_Request *request) {
  if (request)
    *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

} // namespace

extern "C" {

int MPI_Init(int *, char ***) {
  initialized = true;
  return MPI_SUCCESS;
}

int MPI_Init_thread(int *, char ***, int required, int *provided) {
  initialized = true;
  *provided = threadLevel = required;
  return MPI_SUCCESS;
}

int MPI_Initialized(int *flag) {
  *flag = initialized;
  return MPI_SUCCESS;
}

int MPI_Finalize(void) {
  // As MPI does, first thing: MPI_COMM_SELF's attributes' delete
  // callbacks, last set first, while MPI still works.
  while (!selfAttributes.empty()) {
    Attribute attribute = selfAttributes.back();
    selfAttributes.pop_back();
    if (MPI_Comm_delete_attr_function *destroy =
            deleteCallbacks[attribute.keyval])
      destroy(MPI_COMM_SELF, attribute.keyval, attribute.value, nullptr);
  }
  finalized = true;
  return MPI_SUCCESS;
}

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *,
                           MPI_Comm_delete_attr_function *destroy, int *keyval,
                           void *) {
  *keyval = static_cast<int>(deleteCallbacks.size());
  deleteCallbacks.push_back(destroy);
  return MPI_SUCCESS;
}

int MPI_Comm_set_attr(MPI_Comm comm, int keyval, void *value) {
  if (!validComm(comm))
    return MPI_ERR_COMM;
  if (keyval < 0 || keyval >= static_cast<int>(deleteCallbacks.size()))
    return MPI_ERR_ARG;
  // Only MPI_COMM_SELF's are kept: nothing else here reads attributes.
  if (comm == MPI_COMM_SELF)
    selfAttributes.push_back({keyval, value});
  return MPI_SUCCESS;
}

int MPI_Finalized(int *flag) {
  *flag = finalized;
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm, int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code == 0 ? 1 : code);
}

double MPI_Wtime(void) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * now.tv_nsec;
}

int MPI_Error_string(int code, char *text, int *length) {
  const char *what = code == MPI_SUCCESS    ? "success"
                     : code == MPI_ERR_RANK ? "invalid rank (the one-process "
                                              "MPI stub has no other rank)"
                     : code == MPI_ERR_COMM ? "invalid communicator"
                     : code == MPI_ERR_ARG  ? "invalid argument"
                                            : "unknown error";
  *length = std::snprintf(text, MPI_MAX_ERROR_STRING, "%s", what);
  return MPI_SUCCESS;
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  *rank = 0;
  return validComm(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  *size = 1;
  return validComm(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Comm_compare(MPI_Comm a, MPI_Comm b, int *result) {
  // Every communicator holds the one process.
  *result = a == b ? MPI_IDENT : MPI_CONGRUENT;
  return validComm(a) && validComm(b) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler) {
  return validComm(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Comm_split(MPI_Comm comm, int, int, MPI_Comm *out) {
  *out = MPI_COMM_SELF;
  return validComm(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Comm_split_type(MPI_Comm comm, int, int, MPI_Info, MPI_Comm *out) {
  *out = MPI_COMM_SELF;
  return validComm(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Comm_free(MPI_Comm *comm) {
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Bcast(void *, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (!validComm(comm))
    return MPI_ERR_COMM;
  if (root != 0)
    return MPI_ERR_RANK;
  return count >= 0 && typeSize(type) ? MPI_SUCCESS : MPI_ERR_ARG;
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                  MPI_Op, MPI_Comm comm) {
  return validComm(comm) ? copy(send, recv, count, type) : MPI_ERR_COMM;
}

int MPI_Gather(const void *send, int sendCount, MPI_Datatype sendType,
               void *recv, int, MPI_Datatype, int root, MPI_Comm comm) {
  if (!validComm(comm))
    return MPI_ERR_COMM;
  if (root != 0)
    return MPI_ERR_RANK;
  return copy(send, recv, sendCount, sendType);
}

int MPI_Gatherv(const void *send, int sendCount, MPI_Datatype sendType,
                void *recv, const int *, const int *displacements,
                MPI_Datatype recvType, int root, MPI_Comm comm) {
  if (!validComm(comm))
    return MPI_ERR_COMM;
  if (root != 0)
    return MPI_ERR_RANK;
  char *at = static_cast<char *>(recv) +
             typeSize(recvType) * static_cast<size_t>(displacements[0]);
  return copy(send, at, sendCount, sendType);
}

int MPI_Sendrecv(const void *send, int sendCount, MPI_Datatype sendType,
                 int dest, int, void *recv, int, MPI_Datatype, int source, int,
                 MPI_Comm comm, MPI_Status *) {
  if (!validComm(comm))
    return MPI_ERR_COMM;
  if (dest != 0 || source != 0)
    return MPI_ERR_RANK;
  return copy(send, recv, sendCount, sendType);
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype type, int root,
               MPI_Comm comm, MPI_Request *request) {
  int rc = MPI_Bcast(buffer, count, type, root, comm);
  return rc == MPI_SUCCESS ? completed(request) : rc;
}

int MPI_Op_create(MPI_User_function *, int, MPI_Op *op) {
  static int made = 0;
  *op = static_cast<MPI_Op>(100 + made++);
  return MPI_SUCCESS;
}

int MPI_Iallreduce(const void *send, void *recv, int count, MPI_Datatype type,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  int rc = MPI_Allreduce(send, recv, count, type, op, comm);
  return rc == MPI_SUCCESS ? completed(request) : rc;
}

int MPI_Iallgather(const void *send, int sendCount, MPI_Datatype sendType,
                   void *recv, int, MPI_Datatype, MPI_Comm comm,
                   MPI_Request *request) {
  if (!validComm(comm))
    return MPI_ERR_COMM;
  int rc = copy(send, recv, sendCount, sendType);
  return rc == MPI_SUCCESS ? completed(request) : rc;
}

int MPI_Ireduce_scatter(const void *send, void *recv, const int *recvCounts,
                        MPI_Datatype type, MPI_Op, MPI_Comm comm,
                        MPI_Request *request) {
  if (!validComm(comm))
    return MPI_ERR_COMM;
  int rc = copy(send, recv, recvCounts[0], type);
  return rc == MPI_SUCCESS ? completed(request) : rc;
}

int MPI_Isend(const void *, int, MPI_Datatype, int, int, MPI_Comm,
              MPI_Request *) {
  return MPI_ERR_RANK;
}

int MPI_Irecv(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *) {
  return MPI_ERR_RANK;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *) {
  *flag = 1;
  return completed(request);
}

int MPI_Wait(MPI_Request *request, MPI_Status *) { return completed(request); }

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  return validComm(comm) ? completed(request) : MPI_ERR_COMM;
}

int MPI_Barrier(MPI_Comm comm) {
  return validComm(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Query_thread(int *provided) {
  *provided = threadLevel;
  return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) {
  *out = MPI_COMM_SELF;
  return validComm(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Iprobe(int, int, MPI_Comm, int *flag, MPI_Status *) {
  *flag = 0;
  return MPI_SUCCESS;
}

int MPI_Win_allocate(MPI_Aint size, int, MPI_Info, MPI_Comm comm, void *base,
                     MPI_Win *win) {
  if (!validComm(comm))
    return MPI_ERR_COMM;
  char *memory = static_cast<char *>(std::calloc(size > 0 ? size : 1, 1));
  windows.push_back(memory);
  *static_cast<char **>(base) = memory;
  *win = static_cast<MPI_Win>(windows.size());
  return MPI_SUCCESS;
}

int MPI_Win_free(MPI_Win *win) {
  if (!windowBase(*win))
    return MPI_ERR_ARG;
  std::free(windows[*win - 1]);
  windows[*win - 1] = nullptr;
  *win = MPI_WIN_NULL;
  return MPI_SUCCESS;
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler) {
  return windowBase(win) ? MPI_SUCCESS : MPI_ERR_ARG;
}

int MPI_Win_lock(int, int rank, int, MPI_Win win) {
  return rank != 0 ? MPI_ERR_RANK : windowBase(win) ? MPI_SUCCESS : MPI_ERR_ARG;
}

int MPI_Win_unlock(int rank, MPI_Win win) {
  return MPI_Win_lock(0, rank, 0, win);
}

int MPI_Win_flush(int rank, MPI_Win win) {
  return MPI_Win_lock(0, rank, 0, win);
}

int MPI_Win_sync(MPI_Win win) {
  return windowBase(win) ? MPI_SUCCESS : MPI_ERR_ARG;
}

int MPI_Put(const void *origin, int originCount, MPI_Datatype originType,
            int rank, MPI_Aint displacement, int, MPI_Datatype, MPI_Win win) {
  if (int rc = MPI_Win_lock(0, rank, 0, win))
    return rc;
  std::memcpy(windowBase(win) + displacement, origin,
              typeSize(originType) * static_cast<size_t>(originCount));
  return MPI_SUCCESS;
}

int MPI_Get(void *origin, int originCount, MPI_Datatype originType, int rank,
            MPI_Aint displacement, int, MPI_Datatype, MPI_Win win) {
  if (int rc = MPI_Win_lock(0, rank, 0, win))
    return rc;
  std::memcpy(origin, windowBase(win) + displacement,
              typeSize(originType) * static_cast<size_t>(originCount));
  return MPI_SUCCESS;
}

int MPI_Accumulate(const void *origin, int originCount, MPI_Datatype originType,
                   int rank, MPI_Aint displacement, int, MPI_Datatype,
                   MPI_Op op, MPI_Win win) {
  if (int rc = MPI_Win_lock(0, rank, 0, win))
    return rc;
  return accumulate(origin, originCount, originType,
                    windowBase(win) + displacement, op);
}

int MPI_Get_accumulate(const void *origin, int originCount,
                       MPI_Datatype originType, void *result, int resultCount,
                       MPI_Datatype resultType, int rank, MPI_Aint displacement,
                       int, MPI_Datatype, MPI_Op op, MPI_Win win) {
  if (int rc = MPI_Win_lock(0, rank, 0, win))
    return rc;
  char *target = windowBase(win) + displacement;
  std::memcpy(result, target,
              typeSize(resultType) * static_cast<size_t>(resultCount));
  return accumulate(origin, originCount, originType, target, op);
}

} // extern "C"
