//===- CudaKernels.h - GradComm CUDA kernels (host API) ---------*- C++ -*-===//
//
// Part of the GradComm project.
//
// The CUDA twins of src/kernels/Kernels.h. Every pointer is a device pointer;
// every call is enqueued on `stream`. Built with --fmad=false, so results
// are bit-identical to the CPU kernels (tested by CudaKernelsTest when a GPU
// is present).
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_CUDA_CUDAKERNELS_H
#define GRADCOMM_RUNTIME_CUDA_CUDAKERNELS_H

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace gradcomm::cuda {

/// Device scratch of the exact selection, grown on demand and reused.
/// Freed by its destructor, once: not copyable.
struct SelectScratch {
  uint32_t *keys = nullptr;
  int64_t keyCapacity = 0;
  unsigned long long *counters = nullptr; // histogram, state, tile counts
  int64_t counterCapacity = 0;
  SelectScratch() = default;
  SelectScratch(const SelectScratch &) = delete;
  SelectScratch &operator=(const SelectScratch &) = delete;
  ~SelectScratch();
};

/// A CUDA error as "what: cudaGetErrorString" or empty on success.
std::string errorText(cudaError_t error, const char *what);

/// True when some |m + g| (|g| when `m` is null) is NaN or above `limit`
/// (synchronizes `stream`); m + g rounds as the CPU's scan rounds it.
/// `flag` is one device int of the caller's, so the scan allocates nothing.
cudaError_t anyNonFinite(const float *m, const float *g, int64_t n, float limit,
                         int *flag, bool *result, cudaStream_t stream);

/// Exact top-k of |m + g|, ties to the lower index, indices ascending:
/// four 8-bit radix passes find the k-th key, then an ordered compaction
/// writes the indices. Not a sort. Asynchronous: every step is enqueued
/// on `stream`, with no round trip to the host.
cudaError_t selectExact(const float *m, const float *g, int64_t n, int64_t k,
                        int64_t *indices, SelectScratch &scratch,
                        cudaStream_t stream);

/// Top-1 of |m + g| per chunk (ties to the lower index) and, with `values`
/// and `out` non-null, the fused memory update of that chunk in the same
/// kernel: the leader's one-pass chunk path.
cudaError_t selectChunk(float *m, const float *g, int64_t n, int64_t chunkSize,
                        int64_t *indices, float beta, float *values, float *out,
                        bool update, cudaStream_t stream);

/// values[j] = m[I_j] + g[I_j]; then m = m + beta g outside I and
/// m = (1 - beta) m at I; out = 0 when non-null. `marks` is a device array
/// of n uint32 used to flag I (left set to `stamp` at I: pass a new stamp
/// each call).
cudaError_t gatherAndUpdate(float *m, const float *g, int64_t n,
                            const int64_t *indices, int64_t k, float beta,
                            float *values, float *out, uint32_t *marks,
                            uint32_t stamp, cudaStream_t stream);

/// values[j] = m[I_j] + g[I_j], nothing updated.
cudaError_t gather(const float *m, const float *g, const int64_t *indices,
                   int64_t k, float *values, cudaStream_t stream);

/// shard[I_j - begin] = values[j] / divisor: a scatter into the shard that
/// starts at flat offset `begin` (every I_j must fall in it).
cudaError_t scatterIntoShard(float *shard, int64_t begin,
                             const int64_t *indices, const float *values,
                             int64_t k, float divisor, cudaStream_t stream);

/// out[I_j] = values[j] / divisor (divisor 1: a plain scatter).
cudaError_t scatter(float *out, const int64_t *indices, const float *values,
                    int64_t k, float divisor, cudaStream_t stream);

/// out[I_j] += values[j] (indices distinct within one call): the baseline's
/// sum, one worker's block per call, in rank order.
cudaError_t scatterAdd(float *out, const int64_t *indices, const float *values,
                       int64_t k, cudaStream_t stream);

/// The union of `count` gathered indices, repeats allowed: `*distinct` (a
/// device counter) = its size and, when `divide`, out[i] = out[i] / divisor
/// once for each distinct i. `marks` as gatherAndUpdate's (pass a stamp
/// not used since the marks were last cleared).
cudaError_t divideUnion(float *out, const int64_t *indices, int64_t count,
                        bool divide, float divisor, uint32_t *marks,
                        uint32_t stamp, unsigned long long *distinct,
                        cudaStream_t stream);

/// The index broadcast's wire form: index j as `width` (1, 2 or 4)
/// little-endian bytes of its offset inside chunk j (j * chunkSize
/// subtracted; chunkSize 0: the index itself), the CPU backend's encoding;
/// widenIndices is the inverse.
cudaError_t narrowIndices(const int64_t *indices, int64_t k, int width,
                          int64_t chunkSize, uint8_t *wire,
                          cudaStream_t stream);
cudaError_t widenIndices(const uint8_t *wire, int64_t k, int width,
                         int64_t chunkSize, int64_t *indices,
                         cudaStream_t stream);

/// x = (1 - a) x + a peer.
cudaError_t mix(float *x, const float *peer, int64_t n, float a,
                cudaStream_t stream);

/// The 16-bit wire (Wire.h): float32 -> bfloat16 (`bfloat16`) or binary16
/// bits, rounded to nearest even, and back; HalfFloat.h's bits, NaNs
/// included.
cudaError_t narrowValues(const float *in, uint16_t *out, int64_t n,
                         bool bfloat16, cudaStream_t stream);
cudaError_t widenValues(const uint16_t *in, float *out, int64_t n,
                        bool bfloat16, cudaStream_t stream);

/// The training recipe's parts on the device (ops/ScaleCom.cpp's host
/// forms, the same arithmetic). Local clipping: out = g scaled to an L2
/// norm of `clip` when its norm is above, else g. The norm's sum of
/// squares runs in double in a fixed order (kNormBlocks blocks, then one),
/// so it is deterministic but may differ from the CPU's index-order sum in
/// its last bits; `scratch` holds kNormBlocks doubles.
inline constexpr int kNormBlocks = 256;
cudaError_t clipToNorm(const float *g, float *out, int64_t n, float clip,
                       double *scratch, cudaStream_t stream);
/// Momentum correction: next = mu u + g; with `sent` non-null (Nesterov),
/// sent = g + mu next.
cudaError_t velocityStep(const float *u, const float *g, float *next,
                         float *sent, int64_t n, float mu, cudaStream_t stream);
/// u = next, then u[I_j] = 0 for the k indices (factor masking).
cudaError_t commitVelocity(float *u, const float *next, int64_t n,
                           const int64_t *indices, int64_t k,
                           cudaStream_t stream);

/// x = x / divisor (the average after a summing all-reduce).
cudaError_t divide(float *x, int64_t n, float divisor, cudaStream_t stream);

/// Elastic averaging's element-wise parts (ops/ElasticAverage.cpp's host
/// loops, the same arithmetic): sum = x - center; then, once the sums of
/// every rank are in, x = x - alpha (x - center), center = center + alpha
/// sum.
cudaError_t elasticDifferences(const float *x, const float *center, float *sum,
                               int64_t n, cudaStream_t stream);
cudaError_t elasticUpdate(float *x, float *center, const float *sum, int64_t n,
                          float alpha, cudaStream_t stream);

} // namespace gradcomm::cuda

#endif // GRADCOMM_RUNTIME_CUDA_CUDAKERNELS_H
