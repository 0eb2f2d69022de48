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
#include "gradcomm/runtime.h"

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <map>
#include <new>
#include <string>
#include <vector>

namespace gradcomm {

/// Named persistent state of one rank. The memory lives where the backend
/// keeps tensors (host memory for the CPU backend; device memory for the
/// CUDA backend, which will allocate it through its own allocator and stage
/// it through the host for checkpoints).
struct State {
  /// Elements of the memory; 0 for a counter-only state.
  int64_t count = 0;
  uint64_t step = 0;
  /// The memory on the CPU backend.
  std::vector<float> memory;
  /// The memory on the CUDA backend (device pointer).
  float *device = nullptr;
  /// Where the backend keeps the memory.
  float *data() { return device ? device : memory.data(); }
  /// Per-state scratch, reused across steps so the hot path does not
  /// allocate: leader indices and this rank's k values.
  std::vector<int64_t> indices;
  std::vector<float> values;
};

/// The process-wide runtime state: which communicator, who owns MPI, the
/// state registry and the counters.
struct Context {
  bool initialized = false;
  /// True when the runtime called MPI_Init and so must call MPI_Finalize.
  bool ownsMpi = false;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  bool consistencyCheck = true;
  gradcomm_backend backend = GRADCOMM_BACKEND_CPU;
  /// The loaded CUDA backend, when `backend` is CUDA.
  const CudaBackendTable *cuda = nullptr;
  /// Handles a trainer handed in for the CUDA backend (runtime_cuda.h).
  void *ncclComm = nullptr;
  void *cudaStream = nullptr;
  std::map<std::string, State> states;
  std::map<std::string, gradcomm_op_stats> stats;
};

Context &context();

/// One entry-point call: knows what to put in an error message.
class Call {
public:
  Call(const char *operation, const char *opName)
      : operation(operation), opName(opName ? opName : "") {}

  /// Records "gradcomm: <operation> '<op>' on rank r of n: <cause>" as the
  /// last error and returns `status`.
  gradcomm_status fail(gradcomm_status status, const std::string &cause) const;

  /// Translates an MPI return code; `what` names the MPI call.
  gradcomm_status mpi(int mpiError, const char *what) const;

  /// Initializes the runtime on MPI_COMM_WORLD if nothing has yet.
  gradcomm_status ensureInitialized() const;

  const char *name() const { return opName; }

private:
  const char *operation;
  const char *opName;
};

/// Runs `body(call)` and turns any C++ exception into a status, so nothing
/// unwinds through the C ABI.
template <typename Body>
gradcomm_status guarded(const char *operation, const char *opName,
                        Body &&body) {
  Call call(operation, opName);
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

/// True when the CUDA backend is selected.
inline bool usingCuda() { return context().backend == GRADCOMM_BACKEND_CUDA; }

/// Turns a CUDA backend return code and message into a status.
gradcomm_status cudaStatus(const Call &call, int rc, const char *error);

/// Frees every state's device memory and shuts the CUDA backend down.
void releaseCudaBackend();

/// One value the ranks of a collective must agree on.
struct CheckField {
  const char *name;
  int64_t value;
};

/// The consistency check: when enabled, one all-reduce verifies that every
/// field is equal on all ranks (else GRADCOMM_ERR_MISMATCH everywhere) and
/// that no rank saw a non-finite gradient (else GRADCOMM_ERR_NON_FINITE
/// everywhere). When disabled, returns OK without communicating.
gradcomm_status checkConsistency(const Call &call,
                                 const std::vector<CheckField> &fields,
                                 bool localNonFinite);

/// checkConsistency for a device gradient on the CUDA backend: the
/// non-finite scan runs on the device (only when the check is on).
gradcomm_status checkConsistencyOnDevice(const Call &call, const float *grad,
                                         int64_t count,
                                         const std::vector<CheckField> &fields);

/// The float's bits, for CheckField (equal bits, equal parameter).
int64_t floatBits(float value);

/// Counters of op `name`; created on first use.
gradcomm_op_stats &opStats(const char *name);

/// Byte cost models of the collectives (docs/runtime.md).
uint64_t allReduceBytes(uint64_t bytes, int size);
uint64_t broadcastBytes(uint64_t bytes, int size);

/// MPI collectives on counts above INT_MAX, split into several calls.
gradcomm_status allReduceSum(const Call &call, float *data, int64_t count);

/// Completes `request`, testing it and yielding the core between tests
/// (never busy-waiting for long: ranks may share cores).
gradcomm_status waitYielding(const Call &call, MPI_Request &request,
                             const char *what);
gradcomm_status broadcastIndices(const Call &call, int64_t *data, int64_t count,
                                 int root);

/// Seconds since an arbitrary origin (MPI_Wtime).
double now();

/// Validation helpers: each fails with GRADCOMM_ERR_INVALID_ARGUMENT and a
/// message naming the argument.
gradcomm_status requireName(const Call &call, const char *argument,
                            const char *value);
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
