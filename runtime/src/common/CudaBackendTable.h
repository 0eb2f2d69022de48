//===- CudaBackendTable.h - The CUDA backend's function table ---*- C++ -*-===//
//
// Part of the GradComm project.
//
// libgradcomm_runtime does not link CUDA or NCCL: a trainer that never asks
// for the CUDA backend needs neither. `gradcomm_set_backend(CUDA)` loads
// libgradcomm_runtime_cuda.so (built when nvcc is found) and takes this table
// from it. Every entry returns 0 on success, or fills `error` (at most
// kErrorSize bytes, NUL-terminated) and returns non-zero. Pointers are
// device pointers; calls complete before they return, except the `start*`
// entries, which enqueue the same work on the backend's stream and hand
// back a completion to `poll` (and then `forget`). The backend calls no
// MPI: what must be agreed across ranks (did every rank start? NCCL's unique
// id) the runtime agrees on between `prepare` and `connect`.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_CUDABACKENDTABLE_H
#define GRADCOMM_RUNTIME_CUDABACKENDTABLE_H

#include <cstddef>
#include <cstdint>

namespace gradcomm {

inline constexpr int kCudaBackendVersion = 11;
inline constexpr size_t kErrorSize = 512;
/// sizeof(ncclUniqueId) (NCCL_UNIQUE_ID_BYTES), checked where nccl.h is.
inline constexpr size_t kNcclUniqueIdBytes = 128;
inline constexpr const char *kCudaBackendSymbol = "gradcomm_cuda_backend_v11";
inline constexpr const char *kCudaBackendLibrary =
    "libgradcomm_runtime_cuda.so";
/// The type values travel in (runtime.h's gradcomm_wire, whose values
/// these are): float32, or rounded to bfloat16 or binary16 (to nearest
/// even), summed by NCCL in that type and widened back to float32.
inline constexpr int kWireFloat32 = 0;
inline constexpr int kWireBfloat16 = 1;
inline constexpr int kWireFloat16 = 2;

/// Every entry of CudaBackendTable by name, in its order: a table is filled
/// by name (GRADCOMM_CUDA_BACKEND_FILL_TABLE below) and the loader checks each
/// one, so no entry can be filled from a neighbour's function.
#define GRADCOMM_CUDA_BACKEND_ENTRIES(X)                                       \
  X(prepare)                                                                   \
  X(connect)                                                                   \
  X(shutdown)                                                                  \
  X(allocate)                                                                  \
  X(release)                                                                   \
  X(bytesToHost)                                                               \
  X(bytesFromHost)                                                             \
  X(zero)                                                                      \
  X(anyNonFinite)                                                              \
  X(denseAllReduce)                                                            \
  X(scalecom)                                                                  \
  X(compress)                                                                  \
  X(sparseAllReduce)                                                           \
  X(memoryUpdate)                                                              \
  X(localTopk)                                                                 \
  X(gossip)                                                                    \
  X(startDenseAllReduce)                                                       \
  X(startScalecom)                                                             \
  X(startGossip)                                                               \
  X(startSparseAllReduce)                                                      \
  X(startLocalTopk)                                                            \
  X(poll)                                                                      \
  X(completionValue)                                                           \
  X(forget)                                                                    \
  X(splitGroup)                                                                \
  X(useGroup)                                                                  \
  X(freeGroup)                                                                 \
  X(reduceScatter)                                                             \
  X(scalecomReduceScatter)                                                     \
  X(clipInput)                                                                 \
  X(velocityInput)                                                             \
  X(commitVelocity)                                                            \
  X(elasticAverage)                                                            \
  X(widenValues)                                                               \
  X(narrowValues)

/// Sets the version and every entry of a local `CudaBackendTable table`
/// from the function of the same name in the current scope (the compiler
/// checks each one's type): how a backend fills the table it exports as
/// kCudaBackendSymbol.
#define GRADCOMM_CUDA_BACKEND_SET(name) table.name = name;
#define GRADCOMM_CUDA_BACKEND_FILL_TABLE()                                     \
  table.version = ::gradcomm::kCudaBackendVersion;                             \
  GRADCOMM_CUDA_BACKEND_ENTRIES(GRADCOMM_CUDA_BACKEND_SET)

struct CudaBackendTable {
  int version;
  /// This rank's part of starting, nothing collective: picks the device
  /// (the trainer's communicator's; else GRADCOMM_CUDA_DEVICE; else the
  /// node-local rank modulo the devices), makes it current, takes the
  /// trainer's stream or creates one, and on rank 0 (when the backend will
  /// bootstrap NCCL itself) writes NCCL's unique id into `uniqueId`
  /// (kNcclUniqueIdBytes). On failure the backend holds nothing.
  int (*prepare)(int rank, int localRank, void *ncclComm, void *stream,
                 void *uniqueId, char *error);
  /// The collective part, after every rank prepared and the id was
  /// broadcast: ncclCommInitRank (non-blocking, abandoned after
  /// `timeoutSeconds`, 0: never) unless the trainer handed in a
  /// communicator. On failure call shutdown.
  int (*connect)(int rank, int size, const void *uniqueId,
                 double timeoutSeconds, char *error);
  void (*shutdown)();
  /// Zeroed device memory for a state.
  int (*allocate)(float **memory, int64_t count, char *error);
  void (*release)(float *memory);
  /// Any device bytes to the host (indices to validate, tensors to log).
  int (*bytesToHost)(void *host, const void *device, size_t bytes, char *error);
  int (*bytesFromHost)(void *device, const void *host, size_t bytes,
                       char *error);
  /// Zeroes `count` floats (a call skipped by the non-finite policy).
  int (*zero)(float *data, int64_t count, char *error);
  /// `result` = 1 when some |memory + input| (|input| when `memory` is
  /// null) is above `limit` or NaN.
  int (*anyNonFinite)(const float *memory, const float *input, int64_t count,
                      float limit, int *result, char *error);
  /// `wire`: kWire*; a 16-bit wire narrows `data` into a buffer of the
  /// backend's and widens the sum back.
  int (*denseAllReduce)(float *data, int64_t count, int average, int wire,
                        char *error);
  /// One fused ScaleCom step on the device (leader's selection, NCCL
  /// broadcast of the indices, gather + low-pass update, NCCL all-reduce of
  /// the k values, scatter into `out`). The indices travel as
  /// `indexBytes` bytes each (wireIndexBytes: the offset inside its
  /// chunk in 1 or 2 bytes, int32 below 2^31 elements, else int64), so the
  /// counters and the wire agree; the k values as `wire` (kWire*: the
  /// memory update uses them in float32, only the all-reduce narrows).
  int (*scalecom)(float *memory, const float *grad, float *out, int64_t count,
                  int64_t k, int selection, int64_t chunkSize, float beta,
                  int average, int leader, int indexBytes, int wire,
                  char *error);
  /// The dialect's three ScaleCom ops, unfused: the leader's selection and
  /// NCCL broadcast into `indices` and this rank's p[I] into `values`; the
  /// sum (or mean) of `values` scattered into a zeroed `out`; the low-pass
  /// update of `memory` at `indices`.
  int (*compress)(const float *memory, const float *grad, int64_t count,
                  int64_t k, int selection, int64_t chunkSize, int leader,
                  int indexBytes, float *values, int64_t *indices, char *error);
  int (*sparseAllReduce)(const float *values, const int64_t *indices, int64_t k,
                         float *out, int64_t count, int average, char *error);
  int (*memoryUpdate)(float *memory, const float *grad, int64_t count,
                      const int64_t *indices, int64_t k, float beta,
                      char *error);
  /// The local top-k baseline: own exact top-k of m + g, plain error
  /// feedback, ncclAllGather of k values (as `wire`: every block widened
  /// before the sum) and k indices, summed in rank order (then divided
  /// when `average`); `unionSize` gets the number of distinct indices.
  int (*localTopk)(float *memory, const float *grad, float *out, int64_t count,
                   int64_t k, int average, int wire, int64_t *unionSize,
                   char *error);
  /// x = (1 - mixing) x + mixing x_peer, via grouped ncclSend/ncclRecv of
  /// x as `wire` (x itself mixes unrounded).
  int (*gossip)(float *x, int64_t count, int peer, float mixing, int wire,
                char *error);
  /// The started forms of denseAllReduce, scalecom, gossip,
  /// sparseAllReduce and localTopk: the same work, in the same order,
  /// enqueued on the backend's stream without waiting for it;
  /// `*completion` marks its end (an event recorded after it). Work started
  /// earlier runs first (one stream), so the backend's scratch buffers are
  /// reused in order.
  int (*startDenseAllReduce)(float *data, int64_t count, int average, int wire,
                             void **completion, char *error);
  int (*startScalecom)(float *memory, const float *grad, float *out,
                       int64_t count, int64_t k, int selection,
                       int64_t chunkSize, float beta, int average, int leader,
                       int indexBytes, int wire, void **completion,
                       char *error);
  int (*startGossip)(float *x, int64_t count, int peer, float mixing, int wire,
                     void **completion, char *error);
  int (*startSparseAllReduce)(const float *values, const int64_t *indices,
                              int64_t k, float *out, int64_t count, int average,
                              void **completion, char *error);
  /// The union size is the completion's value.
  int (*startLocalTopk)(float *memory, const float *grad, float *out,
                        int64_t count, int64_t k, int average, int wire,
                        void **completion, char *error);
  /// `*finished` = 1 once the work before `completion` is done; an error
  /// NCCL reported asynchronously fails the poll.
  int (*poll)(void *completion, int *finished, char *error);
  /// What a started call produced (startLocalTopk's union size; 0 for the
  /// others), once polled to the end.
  int64_t (*completionValue)(void *completion);
  /// Frees a completion (polled to the end or not).
  void (*forget)(void *completion);
  /// Groups of grid axes: a communicator for the ranks of `color`, ordered
  /// by `key`, split from every rank's (ncclCommSplit: every rank calls it,
  /// for the same groups in the same order); `*group` is its handle.
  int (*splitGroup)(int color, int key, void **group, char *error);
  /// The communicator the next calls run in: `group`, or every rank's for
  /// nullptr.
  void (*useGroup)(void *group);
  /// Frees a group's communicator (after the work queued on it).
  void (*freeGroup)(void *group);
  /// Sharded training, blocking. Shards follow gradcomm_shard_range over
  /// the active communicator (the first count mod n hold one element more).
  /// The dense reduce-scatter: this rank's shard of the sum (or mean) of
  /// `data` into `shard` (ncclReduceScatter when the shards are equal,
  /// else one grouped ncclReduce per shard).
  int (*reduceScatter)(const float *data, float *shard, int64_t count,
                       int average, int wire, char *error);
  /// ScaleCom's step with the k values reduce-scattered: the leader's
  /// selection and index broadcast as `compress`, this rank's p[I], the
  /// low-pass update of `memory`, then each shard's run of the (ascending)
  /// indices reduced to its rank; `shard` gets zeros and the sums (or
  /// means) at the indices that fall in it.
  int (*scalecomReduceScatter)(float *memory, const float *grad, float *shard,
                               int64_t count, int64_t k, int selection,
                               int64_t chunkSize, float beta, int average,
                               int leader, int indexBytes, int wire,
                               char *error);
  /// The training recipe's parts around the fused step (ops/ScaleCom.cpp),
  /// enqueued on the backend's stream. Local clipping: `out` = `grad`
  /// scaled to an L2 norm of at most `clip` (the norm in double, summed in
  /// a fixed order on the device), else a copy.
  int (*clipInput)(const float *grad, float *out, int64_t count, float clip,
                   char *error);
  /// Momentum correction: next = momentum velocity + input and, with
  /// `sent` non-null (Nesterov), sent = input + momentum next.
  int (*velocityInput)(const float *velocity, const float *input, float *next,
                       float *sent, int64_t count, float momentum, char *error);
  /// velocity = next, zeroed at the indices of the last fused ScaleCom step
  /// (scalecom, startScalecom) when `masked`.
  int (*commitVelocity)(float *velocity, const float *next, int64_t count,
                        int masked, char *error);
  /// Elastic averaging (EASGD), blocking: with `first`, center = x summed
  /// over the ranks (ncclAllReduce, float32) and divided by their number;
  /// then sum = x - center, summed over the ranks as `wire` (widened back),
  /// x -= alpha (x - center) and center += alpha sum, element by element
  /// as ops/ElasticAverage.cpp does on the host.
  int (*elasticAverage)(float *x, float *center, int64_t count, float alpha,
                        int first, int wire, char *error);
  /// Compiled code's 16-bit tensors: `count` bfloat16 or binary16 values
  /// (`wire`) widened into float32, and float32 narrowed back to them (to
  /// nearest even), HalfFloat.h's bits, NaNs included; blocking.
  int (*widenValues)(const uint16_t *in, float *out, int64_t count, int wire,
                     char *error);
  int (*narrowValues)(const float *in, uint16_t *out, int64_t count, int wire,
                      char *error);
};

/// The entry list covers the table: one pointer per entry after the
/// version.
#define GRADCOMM_CUDA_BACKEND_COUNT(name) +1
static_assert(
    sizeof(CudaBackendTable) ==
        offsetof(CudaBackendTable, prepare) +
            (0 GRADCOMM_CUDA_BACKEND_ENTRIES(GRADCOMM_CUDA_BACKEND_COUNT)) *
                sizeof(void (*)()),
    "GRADCOMM_CUDA_BACKEND_ENTRIES must name every entry");
#undef GRADCOMM_CUDA_BACKEND_COUNT

/// The first entry `table` leaves null, or nullptr when it sets them all.
inline const char *missingCudaBackendEntry(const CudaBackendTable &table) {
#define GRADCOMM_CUDA_BACKEND_CHECK(name)                                      \
  if (table.name == nullptr)                                                   \
    return #name;
  GRADCOMM_CUDA_BACKEND_ENTRIES(GRADCOMM_CUDA_BACKEND_CHECK)
#undef GRADCOMM_CUDA_BACKEND_CHECK
  return nullptr;
}

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_CUDABACKENDTABLE_H
