//===- CudaKernels.cu - GradComm CUDA kernels -----------------------------===//
//
// Part of the GradComm project.
//
// Compiled with --fmad=false: `m + beta * g` is a rounded multiply and a
// rounded add, as on the CPU, so both backends give the same bits. Integer
// atomics only (counts), so every result is deterministic.
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace gradcomm::cuda {

namespace {

constexpr int kThreads = 256;
/// Elements per block of the ordered compaction.
constexpr int kTile = 4096;

__host__ __device__ __forceinline__ uint32_t magnitudeKey(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x) & 0x7fffffffu;
#else
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits & 0x7fffffffu;
#endif
}

int blocksFor(int64_t n, int64_t perBlock) {
  int64_t blocks = (n + perBlock - 1) / perBlock;
  return static_cast<int>(
      std::min<int64_t>(std::max<int64_t>(blocks, 1), 65535LL * 32));
}

__global__ void nonFiniteKernel(const float *g, int64_t n, uint32_t limitKey,
                                int *flag) {
  int bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    bad |= magnitudeKey(g[i]) > limitKey;
  if (__syncthreads_or(bad) && threadIdx.x == 0)
    atomicOr(flag, 1);
}

/// Adds one to `local[digit]` for every active lane, one shared atomic per
/// distinct digit in the warp: magnitudes cluster in a few exponents, so
/// a plain per-lane atomic serialises whole warps on one counter. Every
/// lane of the warp must call it.
__device__ __forceinline__ void addToDigit(unsigned int *local, uint32_t digit,
                                           bool active) {
  unsigned int activeLanes = __ballot_sync(0xffffffffu, active);
  if (!active)
    return;
  unsigned int peers = __match_any_sync(activeLanes, digit);
  if (__ffs(peers) - 1 == static_cast<int>(threadIdx.x & 31))
    atomicAdd(&local[digit], static_cast<unsigned int>(__popc(peers)));
}

__device__ __forceinline__ void flushHistogram(unsigned int *local,
                                               unsigned long long *histogram) {
  __syncthreads();
  for (int d = threadIdx.x; d < 256; d += blockDim.x)
    if (local[d])
      atomicAdd(&histogram[d], static_cast<unsigned long long>(local[d]));
}

/// The keys |m + g| and the histogram of their top 8 bits, in one pass.
/// The loop advances a whole block at a time so that every lane of a warp
/// reaches addToDigit together.
__global__ void keysAndTopDigitKernel(const float *m, const float *g, int64_t n,
                                      uint32_t *keys,
                                      unsigned long long *histogram) {
  __shared__ unsigned int local[256];
  for (int d = threadIdx.x; d < 256; d += blockDim.x)
    local[d] = 0;
  __syncthreads();
  for (int64_t base = blockIdx.x * int64_t(blockDim.x); base < n;
       base += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = base + threadIdx.x;
    uint32_t key = 0;
    if (i < n) {
      key = magnitudeKey(m[i] + g[i]);
      keys[i] = key;
    }
    addToDigit(local, key >> 24, i < n);
  }
  flushHistogram(local, histogram);
}

/// Histogram of the 8-bit digit at `shift` among keys whose higher bits
/// equal `prefix` (under `mask`).
__global__ void histogramKernel(const uint32_t *keys, int64_t n,
                                uint32_t prefix, uint32_t mask, int shift,
                                unsigned long long *histogram) {
  __shared__ unsigned int local[256];
  for (int d = threadIdx.x; d < 256; d += blockDim.x)
    local[d] = 0;
  __syncthreads();
  for (int64_t base = blockIdx.x * int64_t(blockDim.x); base < n;
       base += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = base + threadIdx.x;
    uint32_t key = i < n ? keys[i] : 0;
    addToDigit(local, (key >> shift) & 0xffu, i < n && (key & mask) == prefix);
  }
  flushHistogram(local, histogram);
}

/// Per tile of kTile elements: how many keys are > threshold and == it.
__global__ void countKernel(const uint32_t *keys, int64_t n, uint32_t threshold,
                            unsigned long long *counts) {
  int64_t begin = int64_t(blockIdx.x) * kTile;
  int64_t end = min(n, begin + kTile);
  unsigned long long greater = 0, equal = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    greater += keys[i] > threshold;
    equal += keys[i] == threshold;
  }
  __shared__ unsigned long long sums[2][kThreads];
  sums[0][threadIdx.x] = greater;
  sums[1][threadIdx.x] = equal;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      sums[0][threadIdx.x] += sums[0][threadIdx.x + stride];
      sums[1][threadIdx.x] += sums[1][threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    counts[2 * blockIdx.x] = sums[0][0];
    counts[2 * blockIdx.x + 1] = sums[1][0];
  }
}

/// Exclusive block scan of one value per thread (blockDim == kThreads).
__device__ unsigned long long blockExclusiveScan(unsigned long long value,
                                                 unsigned long long *shared,
                                                 unsigned long long *total) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int offset = 1; offset < kThreads; offset *= 2) {
    unsigned long long add =
        threadIdx.x >= offset ? shared[threadIdx.x - offset] : 0;
    __syncthreads();
    shared[threadIdx.x] += add;
    __syncthreads();
  }
  unsigned long long inclusive = shared[threadIdx.x];
  *total = shared[kThreads - 1];
  __syncthreads();
  return inclusive - value;
}

/// Writes the selected indices in ascending order: all keys > threshold
/// and the first `needEqual` keys == threshold. `offsets` holds each
/// tile's exclusive prefix of (greater, equal) counts.
__global__ void writeKernel(const uint32_t *keys, int64_t n, uint32_t threshold,
                            unsigned long long needEqual,
                            const unsigned long long *offsets,
                            int64_t *indices) {
  __shared__ unsigned long long scanGreater[kThreads];
  __shared__ unsigned long long scanEqual[kThreads];
  int64_t begin = int64_t(blockIdx.x) * kTile;
  int64_t end = min(n, begin + kTile);
  unsigned long long greaterBefore = offsets[2 * blockIdx.x];
  unsigned long long equalBefore = offsets[2 * blockIdx.x + 1];
  for (int64_t base = begin; base < end; base += kThreads) {
    int64_t i = base + threadIdx.x;
    uint32_t key = i < end ? keys[i] : 0;
    unsigned long long isGreater = i < end && key > threshold;
    unsigned long long isEqual = i < end && key == threshold;
    unsigned long long totalGreater, totalEqual;
    unsigned long long g =
        blockExclusiveScan(isGreater, scanGreater, &totalGreater);
    unsigned long long e = blockExclusiveScan(isEqual, scanEqual, &totalEqual);
    unsigned long long equalRank = equalBefore + e;
    if (isGreater || (isEqual && equalRank < needEqual)) {
      unsigned long long position =
          greaterBefore + g + min(equalRank, needEqual);
      indices[position] = i;
    }
    greaterBefore += totalGreater;
    equalBefore += totalEqual;
  }
}

/// Elements per lane that the warp-per-chunk kernel keeps in registers.
constexpr int kChunkValuesPerLane = 8;
/// The largest chunk the warp-per-chunk kernel takes.
constexpr int64_t kWarpChunkMax = 32 * kChunkValuesPerLane;

/// One warp per chunk of at most kWarpChunkMax elements: each lane keeps
/// its share of m and g in registers, a shuffle reduction finds the top-1
/// (packed as key << 32 | ~offset, so the max is the largest key at the
/// lowest offset), and the same registers feed the memory update. Every
/// element is read once and written once; no shared memory, no barrier.
__global__ void warpChunkKernel(float *m, const float *g, int64_t n,
                                int64_t chunkSize, int64_t chunks,
                                int64_t *indices, float beta, float keep,
                                float *values, float *out, bool update) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) / 32;
  for (int64_t chunk = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
       chunk < chunks; chunk += warps) {
    const int64_t begin = chunk * chunkSize;
    const int count = static_cast<int>(min(chunkSize, n - begin));
    float mine[kChunkValuesPerLane], grad[kChunkValuesPerLane];
    unsigned long long best = 0;
#pragma unroll
    for (int r = 0; r < kChunkValuesPerLane; ++r) {
      const int offset = lane + 32 * r;
      if (offset < count) {
        mine[r] = m[begin + offset];
        grad[r] = g[begin + offset];
        unsigned long long packed =
            (static_cast<unsigned long long>(magnitudeKey(mine[r] + grad[r]))
             << 32) |
            (0xffffffffull - static_cast<unsigned long long>(offset));
        best = max(best, packed);
      }
    }
    for (int stride = 16; stride > 0; stride /= 2)
      best = max(best, __shfl_xor_sync(0xffffffffu, best, stride));
    const int selected =
        static_cast<int>(0xffffffffull - (best & 0xffffffffull));
    if (lane == 0)
      indices[chunk] = begin + selected;
    if (!update)
      continue;
#pragma unroll
    for (int r = 0; r < kChunkValuesPerLane; ++r) {
      const int offset = lane + 32 * r;
      if (offset < count) {
        if (offset == selected) {
          values[chunk] = mine[r] + grad[r];
          m[begin + offset] = keep * mine[r];
        } else {
          m[begin + offset] = mine[r] + beta * grad[r];
        }
        if (out)
          out[begin + offset] = 0.0f;
      }
    }
  }
}

/// One block per chunk, for chunks larger than kWarpChunkMax: the top-1 (packed
/// as key << 32 | ~offset, so the max is the largest key at the lowest offset),
/// then optionally the chunk's memory update.
__global__ void chunkKernel(float *m, const float *g, int64_t n,
                            int64_t chunkSize, int64_t *indices, float beta,
                            float keep, float *values, float *out,
                            bool update) {
  int64_t begin = int64_t(blockIdx.x) * chunkSize;
  int64_t end = min(n, begin + chunkSize);
  unsigned long long best = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    unsigned long long packed =
        (static_cast<unsigned long long>(magnitudeKey(m[i] + g[i])) << 32) |
        (0xffffffffull - static_cast<unsigned long long>(i - begin));
    best = max(best, packed);
  }
  __shared__ unsigned long long reduce[kThreads];
  reduce[threadIdx.x] = best;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      reduce[threadIdx.x] =
          max(reduce[threadIdx.x], reduce[threadIdx.x + stride]);
    __syncthreads();
  }
  int64_t selected =
      begin + static_cast<int64_t>(0xffffffffull - (reduce[0] & 0xffffffffull));
  if (threadIdx.x == 0)
    indices[blockIdx.x] = selected;
  if (!update)
    return;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    if (i == selected) {
      values[blockIdx.x] = m[i] + g[i];
      m[i] = keep * m[i];
    } else {
      m[i] = m[i] + beta * g[i];
    }
    if (out)
      out[i] = 0.0f;
  }
}

__global__ void markAndGatherKernel(const float *m, const float *g,
                                    const int64_t *indices, int64_t k,
                                    float *values, uint32_t *marks,
                                    uint32_t stamp) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = indices[j];
    if (values)
      values[j] = m[i] + g[i];
    marks[i] = stamp;
  }
}

__global__ void gatherKernel(const float *m, const float *g,
                             const int64_t *indices, int64_t k, float *values) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x)
    values[j] = m[indices[j]] + g[indices[j]];
}

__device__ __forceinline__ float updatedMemory(float m, float g, uint32_t mark,
                                               uint32_t stamp, float beta,
                                               float keep) {
  return mark == stamp ? keep * m : m + beta * g;
}

__global__ void updateKernel(float *m, const float *g, int64_t n, float beta,
                             float keep, float *out, const uint32_t *marks,
                             uint32_t stamp) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    m[i] = updatedMemory(m[i], g[i], marks[i], stamp, beta, keep);
    if (out)
      out[i] = 0.0f;
  }
}

/// updateKernel with 16-byte accesses, four elements per thread, for
/// buffers that are all 16-byte aligned (the caller checks; the last n % 4
/// elements go to updateKernel). Same arithmetic, same bits.
__global__ void updateKernel4(float4 *m, const float4 *g, int64_t quads,
                              float beta, float keep, float4 *out,
                              const uint4 *marks, uint32_t stamp) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < quads;
       i += int64_t(gridDim.x) * blockDim.x) {
    float4 mi = m[i], gi = g[i];
    uint4 mark = marks[i];
    mi.x = updatedMemory(mi.x, gi.x, mark.x, stamp, beta, keep);
    mi.y = updatedMemory(mi.y, gi.y, mark.y, stamp, beta, keep);
    mi.z = updatedMemory(mi.z, gi.z, mark.z, stamp, beta, keep);
    mi.w = updatedMemory(mi.w, gi.w, mark.w, stamp, beta, keep);
    m[i] = mi;
    if (out)
      out[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

bool aligned16(const void *pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

__global__ void scatterKernel(float *out, const int64_t *indices,
                              const float *values, int64_t k, float divisor) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x)
    out[indices[j]] = divisor == 1.0f ? values[j] : values[j] / divisor;
}

__global__ void scatterAddKernel(float *out, const int64_t *indices,
                                 const float *values, int64_t k) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x)
    out[indices[j]] += values[j];
}

__global__ void divideAtKernel(float *out, const int64_t *indices, int64_t k,
                               float divisor) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x)
    out[indices[j]] = out[indices[j]] / divisor;
}

__global__ void mixKernel(float *x, const float *peer, int64_t n, float a,
                          float keep) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = keep * x[i] + a * peer[i];
}

__global__ void divideKernel(float *x, int64_t n, float divisor) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = x[i] / divisor;
}

template <typename T>
cudaError_t grow(T *&buffer, int64_t &capacity, int64_t needed) {
  if (capacity >= needed)
    return cudaSuccess;
  cudaFree(buffer);
  buffer = nullptr;
  capacity = 0;
  cudaError_t error = cudaMalloc(&buffer, sizeof(T) * needed);
  if (error == cudaSuccess)
    capacity = needed;
  return error;
}

#define GRADCOMM_CUDA_TRY(expr)                                                \
  do {                                                                         \
    cudaError_t gradcommError = (expr);                                        \
    if (gradcommError != cudaSuccess)                                          \
      return gradcommError;                                                    \
  } while (false)

} // namespace

SelectScratch::~SelectScratch() {
  cudaFree(keys);
  cudaFree(counters);
}

std::string errorText(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return {};
  return std::string(what) + ": " + cudaGetErrorString(error);
}

cudaError_t anyNonFinite(const float *g, int64_t n, float limit, int *flag,
                         bool *result, cudaStream_t stream) {
  GRADCOMM_CUDA_TRY(cudaMemsetAsync(flag, 0, sizeof(int), stream));
  nonFiniteKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(
      g, n, magnitudeKey(limit), flag);
  int host = 0;
  GRADCOMM_CUDA_TRY(cudaMemcpyAsync(&host, flag, sizeof(int),
                                    cudaMemcpyDeviceToHost, stream));
  GRADCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  *result = host != 0;
  return cudaGetLastError();
}

cudaError_t selectExact(const float *m, const float *g, int64_t n, int64_t k,
                        int64_t *indices, SelectScratch &scratch,
                        cudaStream_t stream) {
  const int tiles = static_cast<int>((n + kTile - 1) / kTile);
  GRADCOMM_CUDA_TRY(grow(scratch.keys, scratch.keyCapacity, n));
  GRADCOMM_CUDA_TRY(grow(scratch.counters, scratch.counterCapacity,
                         std::max<int64_t>(256, 2 * int64_t(tiles))));
  const int blocks = blocksFor(n, kThreads * 8);

  // Radix select, most significant digit first: the exact k-th largest key
  // and how many keys equal to it belong to the top k. The first pass also
  // writes the keys.
  uint32_t prefix = 0, mask = 0;
  unsigned long long remaining = static_cast<unsigned long long>(k);
  std::vector<unsigned long long> histogram(256);
  for (int shift = 24; shift >= 0; shift -= 8) {
    GRADCOMM_CUDA_TRY(cudaMemsetAsync(
        scratch.counters, 0, 256 * sizeof(unsigned long long), stream));
    if (shift == 24)
      keysAndTopDigitKernel<<<blocks, kThreads, 0, stream>>>(
          m, g, n, scratch.keys, scratch.counters);
    else
      histogramKernel<<<blocks, kThreads, 0, stream>>>(
          scratch.keys, n, prefix, mask, shift, scratch.counters);
    GRADCOMM_CUDA_TRY(cudaMemcpyAsync(histogram.data(), scratch.counters,
                                      256 * sizeof(unsigned long long),
                                      cudaMemcpyDeviceToHost, stream));
    GRADCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
    int digit = 255;
    for (; digit > 0; --digit) {
      if (histogram[digit] >= remaining)
        break;
      remaining -= histogram[digit];
    }
    prefix |= static_cast<uint32_t>(digit) << shift;
    mask |= 0xffu << shift;
  }

  // Ordered compaction: per-tile counts, their exclusive prefix (on the
  // host: one value pair per 4096 elements), then the ordered write.
  countKernel<<<tiles, kThreads, 0, stream>>>(scratch.keys, n, prefix,
                                              scratch.counters);
  std::vector<unsigned long long> counts(2 * size_t(tiles));
  GRADCOMM_CUDA_TRY(cudaMemcpyAsync(counts.data(), scratch.counters,
                                    counts.size() * sizeof(counts[0]),
                                    cudaMemcpyDeviceToHost, stream));
  GRADCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  unsigned long long greater = 0, equal = 0;
  for (int t = 0; t < tiles; ++t) {
    unsigned long long g = counts[2 * t], e = counts[2 * t + 1];
    counts[2 * t] = greater;
    counts[2 * t + 1] = equal;
    greater += g;
    equal += e;
  }
  GRADCOMM_CUDA_TRY(cudaMemcpyAsync(scratch.counters, counts.data(),
                                    counts.size() * sizeof(counts[0]),
                                    cudaMemcpyHostToDevice, stream));
  writeKernel<<<tiles, kThreads, 0, stream>>>(
      scratch.keys, n, prefix, remaining, scratch.counters, indices);
  GRADCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  return cudaGetLastError();
}

cudaError_t selectChunk(float *m, const float *g, int64_t n, int64_t chunkSize,
                        int64_t *indices, float beta, float *values, float *out,
                        bool update, cudaStream_t stream) {
  int64_t chunks = (n + chunkSize - 1) / chunkSize;
  if (chunkSize <= kWarpChunkMax)
    warpChunkKernel<<<blocksFor(chunks * 32, kThreads), kThreads, 0, stream>>>(
        m, g, n, chunkSize, chunks, indices, beta, 1.0f - beta, values, out,
        update);
  else
    chunkKernel<<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(
        m, g, n, chunkSize, indices, beta, 1.0f - beta, values, out, update);
  return cudaGetLastError();
}

cudaError_t gatherAndUpdate(float *m, const float *g, int64_t n,
                            const int64_t *indices, int64_t k, float beta,
                            float *values, float *out, uint32_t *marks,
                            uint32_t stamp, cudaStream_t stream) {
  markAndGatherKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(
      m, g, indices, k, values, marks, stamp);
  int64_t quads = 0;
  if (aligned16(m) && aligned16(g) && aligned16(marks) &&
      (!out || aligned16(out))) {
    quads = n / 4;
    if (quads > 0)
      updateKernel4<<<blocksFor(quads, kThreads * 4), kThreads, 0, stream>>>(
          reinterpret_cast<float4 *>(m), reinterpret_cast<const float4 *>(g),
          quads, beta, 1.0f - beta, reinterpret_cast<float4 *>(out),
          reinterpret_cast<const uint4 *>(marks), stamp);
  }
  const int64_t done = 4 * quads;
  if (done < n)
    updateKernel<<<blocksFor(n - done, kThreads * 8), kThreads, 0, stream>>>(
        m + done, g + done, n - done, beta, 1.0f - beta,
        out ? out + done : nullptr, marks + done, stamp);
  return cudaGetLastError();
}

cudaError_t gather(const float *m, const float *g, const int64_t *indices,
                   int64_t k, float *values, cudaStream_t stream) {
  gatherKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(m, g, indices,
                                                                k, values);
  return cudaGetLastError();
}

cudaError_t scatter(float *out, const int64_t *indices, const float *values,
                    int64_t k, float divisor, cudaStream_t stream) {
  scatterKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(
      out, indices, values, k, divisor);
  return cudaGetLastError();
}

cudaError_t scatterAdd(float *out, const int64_t *indices, const float *values,
                       int64_t k, cudaStream_t stream) {
  scatterAddKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(
      out, indices, values, k);
  return cudaGetLastError();
}

cudaError_t divideAt(float *out, const int64_t *indices, int64_t k,
                     float divisor, cudaStream_t stream) {
  divideAtKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(out, indices,
                                                                  k, divisor);
  return cudaGetLastError();
}

cudaError_t mix(float *x, const float *peer, int64_t n, float a,
                cudaStream_t stream) {
  mixKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(x, peer, n, a,
                                                                 1.0f - a);
  return cudaGetLastError();
}

cudaError_t divide(float *x, int64_t n, float divisor, cudaStream_t stream) {
  divideKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(x, n,
                                                                    divisor);
  return cudaGetLastError();
}

} // namespace gradcomm::cuda
