//===- CudaBackend.cpp - The CUDA + NCCL backend of the runtime -----------===//
//
// Part of the GradComm project.
//
// libgradcomm_runtime_cuda.so: the function table of CudaBackendTable.h,
// implemented with the kernels of CudaKernels.h and NCCL. Loaded by
// libgradcomm_runtime only when a trainer selects the CUDA backend.
//
//===----------------------------------------------------------------------===//

#include "CudaBackendTable.h"
#include "CudaKernels.h"
#include "Shards.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace gradcomm;

namespace {

/// A group's communicator (splitGroup) and its size.
struct DeviceGroup {
  ncclComm_t comm = nullptr;
  int size = 1;
};

/// The backend's process-wide state, alive between prepare and shutdown.
/// Not copyable: the destructor frees what it holds, once.
struct Backend {
  int device = 0;
  /// Every rank's communicator, and the one the operations use (every
  /// rank's, or the group useGroup chose) with its size.
  ncclComm_t comm = nullptr;
  ncclComm_t active = nullptr;
  int activeSize = 1;
  std::vector<std::unique_ptr<DeviceGroup>> groups;
  bool ownsComm = false;
  cudaStream_t stream = nullptr;
  bool ownsStream = false;
  int size = 1;
  double timeoutSeconds = 0;
  cuda::SelectScratch select;
  int64_t *indices = nullptr;
  int64_t indexCapacity = 0;
  float *values = nullptr;
  int64_t valueCapacity = 0;
  uint32_t *marks = nullptr;
  int64_t markCapacity = 0;
  uint32_t stamp = 0;
  float *peer = nullptr;
  int64_t peerCapacity = 0;
  /// The index broadcast's narrowed form (narrowIndices).
  uint8_t *wire = nullptr;
  int64_t wireCapacity = 0;
  /// Values on a 16-bit wire (narrowValues), summed in place by NCCL.
  uint16_t *wireValues = nullptr;
  int64_t wireValueCapacity = 0;
  /// Local clipping's sums of squares (cuda::kNormBlocks doubles).
  double *normScratch = nullptr;
  /// The indices of the last fused ScaleCom step and how many, for
  /// commitVelocity's masking.
  int64_t lastK = 0;
  int *nonFiniteFlag = nullptr; // one device int for the NaN/Inf scan
  /// The local top-k's union size: counted on the device, copied into a
  /// pinned host slot that the blocking form reads and a started call's
  /// host function moves into its completion (in stream order, so the next
  /// call's copy into the slot comes after it).
  unsigned long long *distinct = nullptr;
  unsigned long long *distinctHost = nullptr;

  Backend() = default;
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;
  ~Backend() {
    cudaSetDevice(device);
    // Never a hang at shutdown: when the stream does not drain (a peer
    // died mid-collective) or NCCL reports an error, the communicators are
    // aborted, which also ends their kernels, before anything is freed;
    // ncclCommDestroy (and cudaStreamSynchronize) would wait forever.
    if (!drains()) {
      for (auto &group : groups)
        ncclCommAbort(group->comm);
      groups.clear();
      if (ownsComm && comm)
        ncclCommAbort(comm);
      comm = nullptr;
    }
    cudaFree(indices);
    cudaFree(values);
    cudaFree(marks);
    cudaFree(peer);
    cudaFree(wire);
    cudaFree(wireValues);
    cudaFree(normScratch);
    cudaFree(nonFiniteFlag);
    cudaFree(distinct);
    cudaFreeHost(distinctHost);
    for (auto &group : groups)
      ncclCommDestroy(group->comm);
    if (ownsComm && comm)
      ncclCommDestroy(comm);
    if (ownsStream && stream)
      cudaStreamDestroy(stream);
  }

  /// True once the stream has finished its work; false on an NCCL error
  /// (asynchronous, every rank's communicator or a group's) or after the
  /// watchdog's limit (GRADCOMM_TIMEOUT; 0: no limit).
  bool drains() const {
    if (!stream)
      return true;
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration<double>(timeoutSeconds > 0 ? timeoutSeconds : 0);
    while (true) {
      cudaError_t state = cudaStreamQuery(stream);
      if (state == cudaSuccess)
        return true;
      if (state != cudaErrorNotReady)
        return false;
      ncclResult_t async = ncclSuccess;
      if (comm && ncclCommGetAsyncError(comm, &async) == ncclSuccess &&
          async != ncclSuccess && async != ncclInProgress)
        return false;
      for (const auto &group : groups)
        if (ncclCommGetAsyncError(group->comm, &async) == ncclSuccess &&
            async != ncclSuccess && async != ncclInProgress)
          return false;
      if (timeoutSeconds > 0 && std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

std::unique_ptr<Backend> backend;

int fail(char *error, const std::string &message) {
  std::snprintf(error, kErrorSize, "%s", message.c_str());
  return 1;
}

#define CUDA_OR_FAIL(expr)                                                     \
  do {                                                                         \
    cudaError_t gradcommCudaError = (expr);                                    \
    if (gradcommCudaError != cudaSuccess)                                      \
      return fail(error, cuda::errorText(gradcommCudaError, #expr));           \
  } while (0)

double secondsNow() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A communicator made non-blocking (the backend's own) may answer
/// ncclInProgress: wait for the operation to settle, at most the
/// watchdog's limit, then abort the communicator (the peers' calls then
/// fail instead of waiting forever).
ncclResult_t settle(ncclComm_t comm, ncclResult_t result, double timeout,
                    bool *timedOut) {
  *timedOut = false;
  const double deadline = secondsNow() + timeout;
  while (result == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &result) != ncclSuccess)
      return ncclInternalError;
    if (result != ncclInProgress)
      break;
    if (timeout > 0 && secondsNow() > deadline) {
      ncclCommAbort(comm);
      *timedOut = true;
      return ncclInternalError;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return result;
}

std::string ncclText(ncclResult_t result, bool timedOut, double timeout,
                     const char *what) {
  if (timedOut)
    return std::string(what) + ": did not finish within " +
           std::to_string(timeout) +
           " s (GRADCOMM_TIMEOUT); the communicator was aborted";
  return std::string(what) + ": " + ncclGetErrorString(result);
}

// The macros' locals carry a gradcomm prefix: `expr` may name the caller's
// variables (a loop's `r`, say), which a plain local would shadow. The first
// run on a GPU found ncclReduce's root read from such a shadowed `r`.
#define NCCL_OR_FAIL(expr)                                                     \
  do {                                                                         \
    bool gradcommTimedOut = false;                                             \
    ncclResult_t gradcommNcclResult = settle(                                  \
        backend->active, (expr), backend->timeoutSeconds, &gradcommTimedOut);  \
    if (gradcommNcclResult != ncclSuccess)                                     \
      return fail(error, ncclText(gradcommNcclResult, gradcommTimedOut,        \
                                  backend->timeoutSeconds, #expr));            \
  } while (0)

/// NCCL_OR_FAIL between ncclGroupStart and ncclGroupEnd: a failure closes
/// the group first, so the next call does not land in a half-built group.
#define NCCL_IN_GROUP_OR_FAIL(expr)                                            \
  do {                                                                         \
    ncclResult_t gradcommNcclResult = (expr);                                  \
    if (gradcommNcclResult != ncclSuccess &&                                   \
        gradcommNcclResult != ncclInProgress) {                                \
      ncclGroupEnd();                                                          \
      return fail(error, std::string(#expr ": ") +                             \
                             ncclGetErrorString(gradcommNcclResult));          \
    }                                                                          \
  } while (0)

/// Every entry point makes the backend's device current on the calling
/// thread: a trainer may call from a thread that never chose it (PyTorch's
/// autograd and DDP threads), and the device is per thread in CUDA.
#define ENTER()                                                                \
  do {                                                                         \
    if (!backend)                                                              \
      return fail(error, "the cuda backend is not started");                   \
    CUDA_OR_FAIL(cudaSetDevice(backend->device));                              \
  } while (0)

/// Grows a device buffer (contents not kept).
template <typename T>
int reserve(T *&buffer, int64_t &capacity, int64_t count, char *error) {
  if (capacity >= count)
    return 0;
  cudaFree(buffer);
  buffer = nullptr;
  capacity = 0;
  CUDA_OR_FAIL(cudaMalloc(&buffer, sizeof(T) * count));
  capacity = count;
  return 0;
}

/// GRADCOMM_CUDA_DEVICE, when set, names the device of every rank of this
/// process (a trainer that launches one process per GPU sets it per rank).
int deviceFromEnvironment(int devices, int *device, char *error) {
  const char *text = std::getenv("GRADCOMM_CUDA_DEVICE");
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value >= devices)
    return fail(error, std::string("GRADCOMM_CUDA_DEVICE='") + text +
                           "' is not a device index in [0, " +
                           std::to_string(devices) + ")");
  *device = static_cast<int>(value);
  return 1;
}

int prepare(int rank, int localRank, void *ncclComm, void *stream,
            void *uniqueId, char *error) {
  backend.reset();
  auto fresh = std::make_unique<Backend>();
  int devices = 0;
  cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted != cudaSuccess || devices == 0) {
    std::string cause = counted != cudaSuccess
                            ? cuda::errorText(counted, "cudaGetDeviceCount")
                            : std::string("no CUDA device visible");
    if (access("/dev/nvidia0", F_OK) != 0)
      cause += " (this machine has no NVIDIA GPU: no /dev/nvidia0)";
    return fail(error, cause);
  }
  if (ncclComm) {
    fresh->comm = static_cast<ncclComm_t>(ncclComm);
    ncclResult_t r = ncclCommCuDevice(fresh->comm, &fresh->device);
    if (r != ncclSuccess)
      return fail(error, std::string("ncclCommCuDevice of the trainer's "
                                     "communicator: ") +
                             ncclGetErrorString(r));
  } else {
    char envError[kErrorSize] = {0};
    int chosen = deviceFromEnvironment(devices, &fresh->device, envError);
    if (envError[0])
      return fail(error, envError);
    if (!chosen)
      fresh->device = localRank % devices;
  }
  CUDA_OR_FAIL(cudaSetDevice(fresh->device));
  if (stream) {
    fresh->stream = static_cast<cudaStream_t>(stream);
  } else {
    // Non-blocking: never implicitly ordered with the legacy default
    // stream, so nothing a trainer does there delays the backend's work.
    CUDA_OR_FAIL(
        cudaStreamCreateWithFlags(&fresh->stream, cudaStreamNonBlocking));
    fresh->ownsStream = true;
  }
  if (!ncclComm && rank == 0) {
    static_assert(sizeof(ncclUniqueId) == kNcclUniqueIdBytes,
                  "kNcclUniqueIdBytes is not NCCL's");
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      return fail(error,
                  std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
    std::memcpy(uniqueId, &id, sizeof(id));
  }
  backend = std::move(fresh);
  return 0;
}

int connect(int rank, int size, const void *uniqueId, double timeoutSeconds,
            char *error) {
  ENTER();
  backend->size = size;
  backend->timeoutSeconds = timeoutSeconds;
  if (backend->comm) {
    backend->active = backend->comm;
    // The trainer's: it must span the runtime's ranks in the same order.
    int count = 0, userRank = 0;
    NCCL_OR_FAIL(ncclCommCount(backend->comm, &count));
    NCCL_OR_FAIL(ncclCommUserRank(backend->comm, &userRank));
    if (count != size || userRank != rank)
      return fail(
          error, "the trainer's NCCL communicator has this process "
                 "as rank " +
                     std::to_string(userRank) + " of " + std::to_string(count) +
                     ", the runtime's MPI communicator as rank " +
                     std::to_string(rank) + " of " + std::to_string(size));
    backend->active = backend->comm;
    backend->activeSize = size;
    return 0;
  }
  ncclUniqueId id;
  std::memcpy(&id, uniqueId, sizeof(id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  bool timedOut = false;
  ncclResult_t r =
      settle(comm, ncclCommInitRankConfig(&comm, size, id, rank, &config),
             timeoutSeconds, &timedOut);
  if (r != ncclSuccess) {
    if (comm && !timedOut)
      ncclCommAbort(comm);
    return fail(
        error, ncclText(r, timedOut, timeoutSeconds, "ncclCommInitRankConfig"));
  }
  backend->comm = comm;
  backend->ownsComm = true;
  backend->active = comm;
  backend->activeSize = size;
  return 0;
}

void shutdown() { backend.reset(); }

int allocate(float **memory, int64_t count, char *error) {
  ENTER();
  *memory = nullptr;
  if (count == 0)
    return 0;
  CUDA_OR_FAIL(cudaMalloc(memory, sizeof(float) * count));
  // On the backend's stream (never the legacy default stream, which a
  // trainer's non-blocking stream does not wait for).
  CUDA_OR_FAIL(
      cudaMemsetAsync(*memory, 0, sizeof(float) * count, backend->stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend->stream));
  return 0;
}

void release(float *memory) {
  if (backend)
    cudaSetDevice(backend->device);
  cudaFree(memory);
}

int bytesToHost(void *host, const void *device, size_t bytes, char *error) {
  ENTER();
  CUDA_OR_FAIL(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost,
                               backend->stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend->stream));
  return 0;
}

/// A fresh stamp for the marks of `count` elements (grown and cleared as
/// needed), so each update sees only its own indices.
int nextStamp(int64_t count, char *error) {
  const int64_t oldMarks = backend->markCapacity;
  if (reserve(backend->marks, backend->markCapacity, count, error))
    return 1;
  if (backend->markCapacity != oldMarks || backend->stamp == UINT32_MAX) {
    CUDA_OR_FAIL(cudaMemsetAsync(backend->marks, 0,
                                 sizeof(uint32_t) * backend->markCapacity,
                                 backend->stream));
    backend->stamp = 0;
  }
  ++backend->stamp;
  return 0;
}

/// The leader's k indices to every rank, `width` bytes each on the wire
/// (narrowed on the leader, widened everywhere; int64 as they are for 8).
/// `rank`: this rank in the active communicator.
int broadcastIndices(int64_t *indices, int64_t k, int64_t chunkSize, int width,
                     int rank, int leader, char *error) {
  if (width == 8) {
    NCCL_OR_FAIL(ncclBroadcast(indices, indices, k, ncclInt64, leader,
                               backend->active, backend->stream));
    return 0;
  }
  if (reserve(backend->wire, backend->wireCapacity, k * width, error))
    return 1;
  if (rank == leader)
    CUDA_OR_FAIL(cuda::narrowIndices(indices, k, width, chunkSize,
                                     backend->wire, backend->stream));
  NCCL_OR_FAIL(ncclBroadcast(backend->wire, backend->wire, k * width, ncclUint8,
                             leader, backend->active, backend->stream));
  CUDA_OR_FAIL(cuda::widenIndices(backend->wire, k, width, chunkSize, indices,
                                  backend->stream));
  return 0;
}

int compress(const float *memory, const float *grad, int64_t count, int64_t k,
             int selection, int64_t chunkSize, int leader, int indexBytes,
             float *values, int64_t *indices, char *error) {
  ENTER();
  int rank = 0;
  NCCL_OR_FAIL(ncclCommUserRank(backend->active, &rank));
  if (rank == leader) {
    if (selection == 1)
      CUDA_OR_FAIL(cuda::selectChunk(const_cast<float *>(memory), grad, count,
                                     chunkSize, indices, 1.0f, nullptr, nullptr,
                                     /*update=*/false, backend->stream));
    else
      CUDA_OR_FAIL(cuda::selectExact(memory, grad, count, k, indices,
                                     backend->select, backend->stream));
  }
  if (broadcastIndices(indices, k, chunkSize, indexBytes, rank, leader, error))
    return 1;
  CUDA_OR_FAIL(cuda::gather(memory, grad, indices, k, values, backend->stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend->stream));
  return 0;
}

int enqueueSparseAllReduce(const float *values, const int64_t *indices,
                           int64_t k, float *out, int64_t count, int average,
                           char *error) {
  if (reserve(backend->values, backend->valueCapacity, k, error))
    return 1;
  NCCL_OR_FAIL(ncclAllReduce(values, backend->values, k, ncclFloat, ncclSum,
                             backend->active, backend->stream));
  CUDA_OR_FAIL(cudaMemsetAsync(out, 0, sizeof(float) * count, backend->stream));
  CUDA_OR_FAIL(cuda::scatter(out, indices, backend->values, k,
                             average ? float(backend->activeSize) : 1.0f,
                             backend->stream));
  return 0;
}

int memoryUpdate(float *memory, const float *grad, int64_t count,
                 const int64_t *indices, int64_t k, float beta, char *error) {
  ENTER();
  if (nextStamp(count, error))
    return 1;
  CUDA_OR_FAIL(cuda::gatherAndUpdate(memory, grad, count, indices, k, beta,
                                     nullptr, nullptr, backend->marks,
                                     backend->stamp, backend->stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend->stream));
  return 0;
}

int bytesFromHost(void *device, const void *host, size_t bytes, char *error) {
  ENTER();
  CUDA_OR_FAIL(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice,
                               backend->stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend->stream));
  return 0;
}

int zero(float *data, int64_t count, char *error) {
  ENTER();
  CUDA_OR_FAIL(
      cudaMemsetAsync(data, 0, sizeof(float) * count, backend->stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend->stream));
  return 0;
}

int anyNonFinite(const float *memory, const float *input, int64_t count,
                 float limit, int *result, char *error) {
  ENTER();
  if (!backend->nonFiniteFlag)
    CUDA_OR_FAIL(cudaMalloc(&backend->nonFiniteFlag, sizeof(int)));
  bool bad = false;
  CUDA_OR_FAIL(cuda::anyNonFinite(memory, input, count, limit,
                                  backend->nonFiniteFlag, &bad,
                                  backend->stream));
  *result = bad;
  return 0;
}

/// Runs `enqueue` (which puts work on the backend's stream) and waits for
/// the stream: the blocking forms.
template <typename Enqueue> int completed(Enqueue &&enqueue, char *error) {
  ENTER();
  if (enqueue())
    return 1;
  CUDA_OR_FAIL(cudaStreamSynchronize(backend->stream));
  return 0;
}

/// A value a started call produces on the device (the local top-k's union
/// size), written by a host function queued on the stream: shared, so a
/// completion forgotten before the stream reaches that function leaves it
/// somewhere to write.
using DeviceValue = std::shared_ptr<std::atomic<int64_t>>;

/// A started call's end: the event recorded after its work, the
/// communicator it ran in (whose asynchronous errors the poll reports) and
/// the value it produces, if any.
struct Completion {
  cudaEvent_t event = nullptr;
  ncclComm_t comm = nullptr;
  DeviceValue value;
};

/// Runs `enqueue` and records an event after its work: the started forms.
template <typename Enqueue>
int started(Enqueue &&enqueue, void **completion, char *error,
            DeviceValue value = nullptr) {
  ENTER();
  *completion = nullptr;
  if (enqueue())
    return 1;
  auto done = std::make_unique<Completion>();
  done->comm = backend->active;
  done->value = std::move(value);
  CUDA_OR_FAIL(cudaEventCreateWithFlags(&done->event, cudaEventDisableTiming));
  cudaError_t recorded = cudaEventRecord(done->event, backend->stream);
  if (recorded != cudaSuccess) {
    cudaEventDestroy(done->event);
    return fail(error, cuda::errorText(recorded, "cudaEventRecord"));
  }
  *completion = done.release();
  return 0;
}

/// Fails unless `wire` is a 16-bit wire type (kWireBfloat16, kWireFloat16).
int requireSixteenBits(int wire, char *error) {
  if (wire != kWireBfloat16 && wire != kWireFloat16)
    return fail(error, "unknown wire type " + std::to_string(wire));
  return 0;
}

/// A 16-bit wire's NCCL type, after checking `wire` (kWire*, not float32)
/// and growing the backend's 16-bit buffer to `count` values.
int sixteenBitWire(int wire, int64_t count, ncclDataType_t *type, char *error) {
  if (requireSixteenBits(wire, error))
    return 1;
  *type = wire == kWireBfloat16 ? ncclBfloat16 : ncclFloat16;
  return reserve(backend->wireValues, backend->wireValueCapacity, count, error);
}

/// The sum over the active communicator of `count` floats at `data`, in
/// place, the values travelling as `wire` (CudaBackendTable.h): float32,
/// or narrowed into the backend's 16-bit buffer, summed by NCCL in that
/// type and widened back into `data`.
int enqueueSumAllReduce(float *data, int64_t count, int wire, char *error) {
  if (wire == kWireFloat32) {
    NCCL_OR_FAIL(ncclAllReduce(data, data, count, ncclFloat, ncclSum,
                               backend->active, backend->stream));
    return 0;
  }
  ncclDataType_t type;
  if (sixteenBitWire(wire, count, &type, error))
    return 1;
  const bool bfloat16 = wire == kWireBfloat16;
  CUDA_OR_FAIL(cuda::narrowValues(data, backend->wireValues, count, bfloat16,
                                  backend->stream));
  NCCL_OR_FAIL(ncclAllReduce(backend->wireValues, backend->wireValues, count,
                             type, ncclSum, backend->active, backend->stream));
  CUDA_OR_FAIL(cuda::widenValues(backend->wireValues, data, count, bfloat16,
                                 backend->stream));
  return 0;
}

int enqueueDenseAllReduce(float *data, int64_t count, int average, int wire,
                          char *error) {
  if (enqueueSumAllReduce(data, count, wire, error))
    return 1;
  // Sum, then divide (not ncclAvg), as the CPU backend does.
  if (average)
    CUDA_OR_FAIL(
        cuda::divide(data, count, float(backend->activeSize), backend->stream));
  return 0;
}

int denseAllReduce(float *data, int64_t count, int average, int wire,
                   char *error) {
  return completed(
      [&] { return enqueueDenseAllReduce(data, count, average, wire, error); },
      error);
}

int startDenseAllReduce(float *data, int64_t count, int average, int wire,
                        void **completion, char *error) {
  return started(
      [&] { return enqueueDenseAllReduce(data, count, average, wire, error); },
      completion, error);
}

int sparseAllReduce(const float *values, const int64_t *indices, int64_t k,
                    float *out, int64_t count, int average, char *error) {
  return completed(
      [&] {
        return enqueueSparseAllReduce(values, indices, k, out, count, average,
                                      error);
      },
      error);
}

int startSparseAllReduce(const float *values, const int64_t *indices, int64_t k,
                         float *out, int64_t count, int average,
                         void **completion, char *error) {
  return started(
      [&] {
        return enqueueSparseAllReduce(values, indices, k, out, count, average,
                                      error);
      },
      completion, error);
}

int enqueueScalecom(float *memory, const float *grad, float *out, int64_t count,
                    int64_t k, int selection, int64_t chunkSize, float beta,
                    int average, int leader, int indexBytes, int wire,
                    char *error) {
  int rank = 0;
  NCCL_OR_FAIL(ncclCommUserRank(backend->active, &rank));
  if (reserve(backend->indices, backend->indexCapacity, k, error) ||
      reserve(backend->values, backend->valueCapacity, k, error) ||
      nextStamp(count, error))
    return 1;
  const bool chunk = selection == 1;
  bool updated = false;
  if (rank == leader) {
    if (chunk) {
      CUDA_OR_FAIL(cuda::selectChunk(memory, grad, count, chunkSize,
                                     backend->indices, beta, backend->values,
                                     out,
                                     /*update=*/true, backend->stream));
      updated = true;
    } else {
      CUDA_OR_FAIL(cuda::selectExact(memory, grad, count, k, backend->indices,
                                     backend->select, backend->stream));
    }
  }
  if (broadcastIndices(backend->indices, k, chunkSize, indexBytes, rank, leader,
                       error))
    return 1;
  if (!updated)
    CUDA_OR_FAIL(cuda::gatherAndUpdate(
        memory, grad, count, backend->indices, k, beta, backend->values, out,
        backend->marks, backend->stamp, backend->stream));
  if (enqueueSumAllReduce(backend->values, k, wire, error))
    return 1;
  backend->lastK = k;
  CUDA_OR_FAIL(cuda::scatter(out, backend->indices, backend->values, k,
                             average ? float(backend->activeSize) : 1.0f,
                             backend->stream));
  return 0;
}

int scalecom(float *memory, const float *grad, float *out, int64_t count,
             int64_t k, int selection, int64_t chunkSize, float beta,
             int average, int leader, int indexBytes, int wire, char *error) {
  return completed(
      [&] {
        return enqueueScalecom(memory, grad, out, count, k, selection,
                               chunkSize, beta, average, leader, indexBytes,
                               wire, error);
      },
      error);
}

int startScalecom(float *memory, const float *grad, float *out, int64_t count,
                  int64_t k, int selection, int64_t chunkSize, float beta,
                  int average, int leader, int indexBytes, int wire,
                  void **completion, char *error) {
  return started(
      [&] {
        return enqueueScalecom(memory, grad, out, count, k, selection,
                               chunkSize, beta, average, leader, indexBytes,
                               wire, error);
      },
      completion, error);
}

int clipInput(const float *grad, float *out, int64_t count, float clip,
              char *error) {
  ENTER();
  if (!backend->normScratch)
    CUDA_OR_FAIL(
        cudaMalloc(&backend->normScratch, sizeof(double) * cuda::kNormBlocks));
  CUDA_OR_FAIL(cuda::clipToNorm(grad, out, count, clip, backend->normScratch,
                                backend->stream));
  return 0;
}

int velocityInput(const float *velocity, const float *input, float *next,
                  float *sent, int64_t count, float momentum, char *error) {
  ENTER();
  CUDA_OR_FAIL(cuda::velocityStep(velocity, input, next, sent, count, momentum,
                                  backend->stream));
  return 0;
}

int commitVelocity(float *velocity, const float *next, int64_t count,
                   int masked, char *error) {
  ENTER();
  CUDA_OR_FAIL(cuda::commitVelocity(velocity, next, count, backend->indices,
                                    masked ? backend->lastK : 0,
                                    backend->stream));
  return 0;
}

int enqueueLocalTopk(float *memory, const float *grad, float *out,
                     int64_t count, int64_t k, int average, int wire,
                     char *error) {
  const int64_t all = k * backend->activeSize;
  if (reserve(backend->indices, backend->indexCapacity, all, error) ||
      reserve(backend->values, backend->valueCapacity, all, error) ||
      nextStamp(count, error))
    return 1;
  if (!backend->distinct)
    CUDA_OR_FAIL(cudaMalloc(&backend->distinct, sizeof(*backend->distinct)));
  if (!backend->distinctHost)
    CUDA_OR_FAIL(
        cudaMallocHost(&backend->distinctHost, sizeof(*backend->distinctHost)));
  int rank = 0;
  NCCL_OR_FAIL(ncclCommUserRank(backend->active, &rank));
  // This rank's block of the gathered buffers holds its own k entries.
  int64_t *mine = backend->indices + rank * k;
  float *myValues = backend->values + rank * k;
  CUDA_OR_FAIL(cuda::selectExact(memory, grad, count, k, mine, backend->select,
                                 backend->stream));
  // The memory pass also zeroes the output the blocks are added into.
  CUDA_OR_FAIL(cuda::gatherAndUpdate(memory, grad, count, mine, k, 1.0f,
                                     myValues, out, backend->marks,
                                     backend->stamp, backend->stream));
  // On a 16-bit wire every block travels narrowed, this rank's too (the
  // all-gather is in place), and is widened before the float32 sum, as on
  // the CPU.
  const void *sent = myValues;
  void *gathered = backend->values;
  ncclDataType_t type = ncclFloat;
  const bool bfloat16 = wire == kWireBfloat16;
  if (wire != kWireFloat32) {
    if (sixteenBitWire(wire, all, &type, error))
      return 1;
    uint16_t *myWire = backend->wireValues + rank * k;
    CUDA_OR_FAIL(
        cuda::narrowValues(myValues, myWire, k, bfloat16, backend->stream));
    sent = myWire;
    gathered = backend->wireValues;
  }
  NCCL_OR_FAIL(ncclGroupStart());
  NCCL_IN_GROUP_OR_FAIL(
      ncclAllGather(sent, gathered, k, type, backend->active, backend->stream));
  NCCL_IN_GROUP_OR_FAIL(ncclAllGather(mine, backend->indices, k, ncclInt64,
                                      backend->active, backend->stream));
  NCCL_OR_FAIL(ncclGroupEnd());
  if (wire != kWireFloat32)
    CUDA_OR_FAIL(cuda::widenValues(backend->wireValues, backend->values, all,
                                   bfloat16, backend->stream));
  for (int r = 0; r < backend->activeSize; ++r)
    CUDA_OR_FAIL(cuda::scatterAdd(out, backend->indices + r * k,
                                  backend->values + r * k, k, backend->stream));
  // The union (build-up) on the device, on a stamp of its own (the first
  // one marks this rank's k): sized, and averaged once per index.
  if (nextStamp(count, error))
    return 1;
  CUDA_OR_FAIL(cuda::divideUnion(
      out, backend->indices, all, average != 0, float(backend->activeSize),
      backend->marks, backend->stamp, backend->distinct, backend->stream));
  CUDA_OR_FAIL(cudaMemcpyAsync(backend->distinctHost, backend->distinct,
                               sizeof(*backend->distinct),
                               cudaMemcpyDeviceToHost, backend->stream));
  return 0;
}

int localTopk(float *memory, const float *grad, float *out, int64_t count,
              int64_t k, int average, int wire, int64_t *unionSize,
              char *error) {
  if (completed(
          [&] {
            return enqueueLocalTopk(memory, grad, out, count, k, average, wire,
                                    error);
          },
          error))
    return 1;
  *unionSize = static_cast<int64_t>(*backend->distinctHost);
  return 0;
}

/// The pinned union size into a started call's value, run by the stream.
struct ValueCopy {
  const unsigned long long *source;
  DeviceValue target;
};

void CUDART_CB copyValue(void *data) {
  std::unique_ptr<ValueCopy> copy(static_cast<ValueCopy *>(data));
  copy->target->store(static_cast<int64_t>(*copy->source));
}

int startLocalTopk(float *memory, const float *grad, float *out, int64_t count,
                   int64_t k, int average, int wire, void **completion,
                   char *error) {
  DeviceValue unionSize = std::make_shared<std::atomic<int64_t>>(0);
  return started(
      [&] {
        if (enqueueLocalTopk(memory, grad, out, count, k, average, wire, error))
          return 1;
        auto copy = std::make_unique<ValueCopy>(
            ValueCopy{backend->distinctHost, unionSize});
        CUDA_OR_FAIL(
            cudaLaunchHostFunc(backend->stream, copyValue, copy.get()));
        copy.release(); // copyValue frees it
        return 0;
      },
      completion, error, unionSize);
}

int enqueueGossip(float *x, int64_t count, int peer, float mixing, int wire,
                  char *error) {
  // Growing the buffer frees the old one: cudaFree waits for the work
  // still using it, so exchanges in flight keep their data.
  if (reserve(backend->peer, backend->peerCapacity, count, error))
    return 1;
  if (wire == kWireFloat32) {
    NCCL_OR_FAIL(ncclGroupStart());
    NCCL_IN_GROUP_OR_FAIL(
        ncclSend(x, count, ncclFloat, peer, backend->active, backend->stream));
    NCCL_IN_GROUP_OR_FAIL(ncclRecv(backend->peer, count, ncclFloat, peer,
                                   backend->active, backend->stream));
    NCCL_OR_FAIL(ncclGroupEnd());
  } else {
    // x narrowed in the first half of the 16-bit buffer, the peer's
    // received in the second and widened; x itself mixes unrounded, as on
    // the CPU.
    ncclDataType_t type;
    if (sixteenBitWire(wire, 2 * count, &type, error))
      return 1;
    const bool bfloat16 = wire == kWireBfloat16;
    uint16_t *mine = backend->wireValues, *theirs = mine + count;
    CUDA_OR_FAIL(cuda::narrowValues(x, mine, count, bfloat16, backend->stream));
    NCCL_OR_FAIL(ncclGroupStart());
    NCCL_IN_GROUP_OR_FAIL(
        ncclSend(mine, count, type, peer, backend->active, backend->stream));
    NCCL_IN_GROUP_OR_FAIL(
        ncclRecv(theirs, count, type, peer, backend->active, backend->stream));
    NCCL_OR_FAIL(ncclGroupEnd());
    CUDA_OR_FAIL(cuda::widenValues(theirs, backend->peer, count, bfloat16,
                                   backend->stream));
  }
  CUDA_OR_FAIL(cuda::mix(x, backend->peer, count, mixing, backend->stream));
  return 0;
}

int gossip(float *x, int64_t count, int peer, float mixing, int wire,
           char *error) {
  return completed(
      [&] { return enqueueGossip(x, count, peer, mixing, wire, error); },
      error);
}

int startGossip(float *x, int64_t count, int peer, float mixing, int wire,
                void **completion, char *error) {
  return started(
      [&] { return enqueueGossip(x, count, peer, mixing, wire, error); },
      completion, error);
}

int elasticAverage(float *x, float *center, int64_t count, float alpha,
                   int first, int wire, char *error) {
  return completed(
      [&] {
        if (first) {
          // The center starts at the replicas' mean (float32 on the wire,
          // as the host's first call).
          CUDA_OR_FAIL(cudaMemcpyAsync(center, x, sizeof(float) * count,
                                       cudaMemcpyDeviceToDevice,
                                       backend->stream));
          if (enqueueDenseAllReduce(center, count, /*average=*/1, kWireFloat32,
                                    error))
            return 1;
        }
        // The differences in the peer buffer (gossip's; the calls of one
        // backend run one after another on its stream).
        if (reserve(backend->peer, backend->peerCapacity, count, error))
          return 1;
        CUDA_OR_FAIL(cuda::elasticDifferences(x, center, backend->peer, count,
                                              backend->stream));
        if (enqueueSumAllReduce(backend->peer, count, wire, error))
          return 1;
        CUDA_OR_FAIL(cuda::elasticUpdate(x, center, backend->peer, count, alpha,
                                         backend->stream));
        return 0;
      },
      error);
}

int widenValues(const uint16_t *in, float *out, int64_t count, int wire,
                char *error) {
  return completed(
      [&] {
        if (requireSixteenBits(wire, error))
          return 1;
        CUDA_OR_FAIL(cuda::widenValues(in, out, count, wire == kWireBfloat16,
                                       backend->stream));
        return 0;
      },
      error);
}

int narrowValues(const float *in, uint16_t *out, int64_t count, int wire,
                 char *error) {
  return completed(
      [&] {
        if (requireSixteenBits(wire, error))
          return 1;
        CUDA_OR_FAIL(cuda::narrowValues(in, out, count, wire == kWireBfloat16,
                                        backend->stream));
        return 0;
      },
      error);
}

int poll(void *completion, int *finished, char *error) {
  ENTER();
  *finished = 0;
  const Completion &done = *static_cast<const Completion *>(completion);
  cudaError_t state = cudaEventQuery(done.event);
  if (state != cudaSuccess && state != cudaErrorNotReady)
    return fail(error, cuda::errorText(state, "cudaEventQuery"));
  // A peer that failed shows here, not as a stuck event.
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(done.comm, &async) == ncclSuccess &&
      async != ncclSuccess && async != ncclInProgress)
    return fail(error,
                std::string("NCCL reported: ") + ncclGetErrorString(async));
  *finished = state == cudaSuccess;
  return 0;
}

int64_t completionValue(void *completion) {
  const auto *done = static_cast<const Completion *>(completion);
  return done->value ? done->value->load() : 0;
}

void forget(void *completion) {
  if (!completion)
    return;
  if (backend)
    cudaSetDevice(backend->device);
  auto *done = static_cast<Completion *>(completion);
  cudaEventDestroy(done->event);
  delete done;
}

int splitGroup(int color, int key, void **group, char *error) {
  ENTER();
  *group = nullptr;
  auto made = std::make_unique<DeviceGroup>();
  // The child inherits every rank's communicator's configuration: a
  // non-blocking one (the backend's own) answers at once and is settled
  // under the watchdog's limit like every other call.
  bool timedOut = false;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommSplit(backend->comm, color, key, &comm, nullptr);
  if (r == ncclInProgress && comm)
    r = settle(comm, r, backend->timeoutSeconds, &timedOut);
  if (r != ncclSuccess) {
    if (comm && !timedOut)
      ncclCommAbort(comm);
    return fail(
        error, ncclText(r, timedOut, backend->timeoutSeconds, "ncclCommSplit"));
  }
  made->comm = comm;
  r = ncclCommCount(comm, &made->size);
  if (r != ncclSuccess) {
    ncclCommDestroy(comm);
    return fail(error, std::string("ncclCommCount: ") + ncclGetErrorString(r));
  }
  *group = made.get();
  backend->groups.push_back(std::move(made));
  return 0;
}

void useGroup(void *group) {
  if (!backend)
    return;
  auto *chosen = static_cast<DeviceGroup *>(group);
  backend->active = chosen ? chosen->comm : backend->comm;
  backend->activeSize = chosen ? chosen->size : backend->size;
}

void freeGroup(void *group) {
  if (!backend || !group)
    return;
  cudaSetDevice(backend->device);
  auto &groups = backend->groups;
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    if (it->get() != group)
      continue;
    if (backend->active == (*it)->comm)
      useGroup(nullptr);
    // Work still queued on the stream may use it.
    cudaStreamSynchronize(backend->stream);
    ncclCommDestroy((*it)->comm);
    groups.erase(it);
    return;
  }
}

//===----------------------------------------------------------------------===//
// Sharded training: reduce-scatters
//===----------------------------------------------------------------------===//

/// What a reduce-scatter sends and where its shard arrives: `data` and the
/// caller's shard in float32, or on a 16-bit wire the first `count` values
/// of the backend's 16-bit buffer (`data` narrowed into them) and the
/// shard's `length` after them, widened into the caller's shard by
/// `widen`.
struct WireBuffers {
  const void *send;
  void *receive;
  ncclDataType_t type = ncclFloat;
  size_t bytes = sizeof(float);

  int prepare(const float *data, int64_t count, float *shard, int64_t length,
              int wire, char *error) {
    send = data;
    receive = shard;
    if (wire == kWireFloat32)
      return 0;
    if (sixteenBitWire(wire, count + length, &type, error))
      return 1;
    bytes = sizeof(uint16_t);
    send = backend->wireValues;
    receive = backend->wireValues + count;
    CUDA_OR_FAIL(cuda::narrowValues(data, backend->wireValues, count,
                                    wire == kWireBfloat16, backend->stream));
    return 0;
  }
  int widen(float *shard, int64_t length, int wire, char *error) const {
    if (wire != kWireFloat32 && length > 0)
      CUDA_OR_FAIL(cuda::widenValues(static_cast<const uint16_t *>(receive),
                                     shard, length, wire == kWireBfloat16,
                                     backend->stream));
    return 0;
  }
};

/// Reduces each rank's run [firsts[r], firsts[r] + lengths[r]) of
/// `wire.send` to rank r, into `wire.receive` on that rank: one grouped
/// ncclReduce per non-empty run (NCCL's reduce-scatter takes equal counts
/// only). Every rank passes the same runs.
int reduceRuns(const WireBuffers &wire, const std::vector<int64_t> &firsts,
               const std::vector<int64_t> &lengths, char *error) {
  NCCL_OR_FAIL(ncclGroupStart());
  for (size_t r = 0; r < lengths.size(); ++r) {
    if (lengths[r] == 0)
      continue;
    NCCL_IN_GROUP_OR_FAIL(ncclReduce(
        static_cast<const char *>(wire.send) + firsts[r] * wire.bytes,
        wire.receive, lengths[r], wire.type, ncclSum, static_cast<int>(r),
        backend->active, backend->stream));
  }
  NCCL_OR_FAIL(ncclGroupEnd());
  return 0;
}

int reduceScatter(const float *data, float *shard, int64_t count, int average,
                  int wire, char *error) {
  return completed(
      [&] {
        const int size = backend->activeSize;
        int rank = 0;
        NCCL_OR_FAIL(ncclCommUserRank(backend->active, &rank));
        const std::vector<int64_t> bounds = shardBounds(count, size);
        const int64_t length = bounds[rank + 1] - bounds[rank];
        WireBuffers buffers;
        if (buffers.prepare(data, count, shard, length, wire, error))
          return 1;
        if (count % size == 0) {
          NCCL_OR_FAIL(ncclReduceScatter(buffers.send, buffers.receive,
                                         count / size, buffers.type, ncclSum,
                                         backend->active, backend->stream));
        } else {
          std::vector<int64_t> lengths(size);
          for (int r = 0; r < size; ++r)
            lengths[r] = bounds[r + 1] - bounds[r];
          if (reduceRuns(buffers, bounds, lengths, error))
            return 1;
        }
        if (buffers.widen(shard, length, wire, error))
          return 1;
        // Sum, then divide (not ncclAvg), as the CPU backend does.
        if (average && length > 0)
          CUDA_OR_FAIL(
              cuda::divide(shard, length, float(size), backend->stream));
        return 0;
      },
      error);
}

int scalecomReduceScatter(float *memory, const float *grad, float *shard,
                          int64_t count, int64_t k, int selection,
                          int64_t chunkSize, float beta, int average,
                          int leader, int indexBytes, int wire, char *error) {
  return completed(
      [&] {
        const int size = backend->activeSize;
        int rank = 0;
        NCCL_OR_FAIL(ncclCommUserRank(backend->active, &rank));
        if (reserve(backend->indices, backend->indexCapacity, k, error) ||
            reserve(backend->values, backend->valueCapacity, k, error) ||
            reserve(backend->peer, backend->peerCapacity, k, error) ||
            nextStamp(count, error))
          return 1;
        if (rank == leader) {
          if (selection == 1)
            CUDA_OR_FAIL(cuda::selectChunk(
                memory, grad, count, chunkSize, backend->indices, 1.0f, nullptr,
                nullptr, /*update=*/false, backend->stream));
          else
            CUDA_OR_FAIL(cuda::selectExact(memory, grad, count, k,
                                           backend->indices, backend->select,
                                           backend->stream));
        }
        if (broadcastIndices(backend->indices, k, chunkSize, indexBytes, rank,
                             leader, error))
          return 1;
        // p[I] before the update changes m.
        CUDA_OR_FAIL(cuda::gather(memory, grad, backend->indices, k,
                                  backend->values, backend->stream));
        CUDA_OR_FAIL(cuda::gatherAndUpdate(
            memory, grad, count, backend->indices, k, beta, nullptr, nullptr,
            backend->marks, backend->stamp, backend->stream));
        // The runs of the shards, from the indices on the host (k of
        // them, ascending; the same on every rank).
        std::vector<int64_t> indices(k);
        CUDA_OR_FAIL(cudaMemcpyAsync(indices.data(), backend->indices,
                                     sizeof(int64_t) * k,
                                     cudaMemcpyDeviceToHost, backend->stream));
        CUDA_OR_FAIL(cudaStreamSynchronize(backend->stream));
        const std::vector<int64_t> bounds = shardBounds(count, size);
        std::vector<int64_t> firsts(size), lengths(size);
        for (int r = 0; r < size; ++r) {
          firsts[r] =
              std::lower_bound(indices.begin(), indices.end(), bounds[r]) -
              indices.begin();
          lengths[r] =
              (std::lower_bound(indices.begin(), indices.end(), bounds[r + 1]) -
               indices.begin()) -
              firsts[r];
        }
        WireBuffers buffers;
        if (buffers.prepare(backend->values, k, backend->peer, lengths[rank],
                            wire, error) ||
            reduceRuns(buffers, firsts, lengths, error) ||
            buffers.widen(backend->peer, lengths[rank], wire, error))
          return 1;
        const int64_t length = bounds[rank + 1] - bounds[rank];
        CUDA_OR_FAIL(
            cudaMemsetAsync(shard, 0, sizeof(float) * length, backend->stream));
        CUDA_OR_FAIL(cuda::scatterIntoShard(
            shard, bounds[rank], backend->indices + firsts[rank], backend->peer,
            lengths[rank], average ? float(size) : 1.0f, backend->stream));
        return 0;
      },
      error);
}

/// Every entry by name (CudaBackendTable.h).
CudaBackendTable filledTable() {
  CudaBackendTable table{};
  GRADCOMM_CUDA_BACKEND_FILL_TABLE()
  return table;
}

} // namespace

extern "C" __attribute__((visibility("default")))
// Filled by name (CudaBackendTable.h).
const CudaBackendTable gradcomm_cuda_backend_v11 = filledTable();
