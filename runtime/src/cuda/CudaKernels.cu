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

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace gradcomm::cuda {

namespace {

constexpr int kThreads = 256;
/// Elements per block of the ordered compaction (a span of 2048 per warp).
constexpr int kTile = 16384;

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

__global__ void nonFiniteKernel(const float *m, const float *g, int64_t n,
                                uint32_t limitKey, int *flag) {
  int bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    bad |= magnitudeKey(m ? m[i] + g[i] : g[i]) > limitKey;
  if (__syncthreads_or(bad) && threadIdx.x == 0)
    atomicOr(flag, 1);
}

/// The radix selection's running state, kept on the device so that the
/// passes chain on the stream without a round trip to the host: the
/// digits of the k-th largest key found so far (`prefix` under `mask`),
/// and how many keys with that prefix still belong to the top k.
struct SelectState {
  uint32_t prefix;
  uint32_t mask;
  unsigned long long remaining;
};

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
/// equal `prefix` (under `mask`), four keys per 16-byte load. After the
/// first pass the digits below the prefix are spread out, so plain shared
/// atomics rarely collide.
__global__ void histogramKernel(const uint32_t *keys, int64_t n,
                                const SelectState *state, int shift,
                                unsigned long long *histogram) {
  const uint32_t prefix = state->prefix, mask = state->mask;
  __shared__ unsigned int local[256];
  for (int d = threadIdx.x; d < 256; d += blockDim.x)
    local[d] = 0;
  __syncthreads();
  auto add = [&](uint32_t key) {
    if ((key & mask) == prefix)
      atomicAdd(&local[(key >> shift) & 0xffu], 1u);
  };
  // The keys buffer comes from cudaMalloc: 16-byte aligned.
  const uint4 *quads = reinterpret_cast<const uint4 *>(keys);
  const int64_t quadCount = n / 4;
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t q = first; q < quadCount; q += stride) {
    const uint4 four = quads[q];
    add(four.x);
    add(four.y);
    add(four.z);
    add(four.w);
  }
  for (int64_t i = 4 * quadCount + first; i < n; i += stride)
    add(keys[i]);
  flushHistogram(local, histogram);
}

/// Picks the digit at `shift` of the k-th largest key from the pass's
/// histogram (one thread: 256 steps), then clears the histogram for the
/// next pass. The first pass (shift 24) starts the state from k.
__global__ void pickDigitKernel(unsigned long long *histogram,
                                SelectState *state, int shift, int64_t k) {
  if (threadIdx.x == 0) {
    SelectState next =
        shift == 24 ? SelectState{0, 0, (unsigned long long)k} : *state;
    int digit = 255;
    for (; digit > 0; --digit) {
      if (histogram[digit] >= next.remaining)
        break;
      next.remaining -= histogram[digit];
    }
    next.prefix |= static_cast<uint32_t>(digit) << shift;
    next.mask |= 0xffu << shift;
    *state = next;
  }
  __syncthreads();
  for (int d = threadIdx.x; d < 256; d += blockDim.x)
    histogram[d] = 0;
}

/// Inclusive prefix sums of two values across the lanes of a warp.
__device__ __forceinline__ void warpInclusiveScan(unsigned long long &first,
                                                  unsigned long long &second) {
  const int lane = threadIdx.x & 31;
  for (int offset = 1; offset < 32; offset *= 2) {
    const unsigned long long a = __shfl_up_sync(0xffffffffu, first, offset);
    const unsigned long long b = __shfl_up_sync(0xffffffffu, second, offset);
    if (lane >= offset) {
      first += a;
      second += b;
    }
  }
}

/// Threads of the one-block tile scan.
constexpr int kScanThreads = 1024;

/// Exclusive prefix, in place, of the per-tile (greater, equal) count
/// pairs: one block walks the tiles kScanThreads at a time (coalesced
/// loads, warp-shuffle scans), carrying the running totals.
__global__ void scanTilesKernel(unsigned long long *counts, int64_t tiles) {
  __shared__ unsigned long long warpBefore[2][32];
  __shared__ unsigned long long carry[2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  if (threadIdx.x == 0)
    carry[0] = carry[1] = 0;
  for (int64_t base = 0; base < tiles; base += kScanThreads) {
    const int64_t t = base + threadIdx.x;
    const unsigned long long greater = t < tiles ? counts[2 * t] : 0;
    const unsigned long long equal = t < tiles ? counts[2 * t + 1] : 0;
    unsigned long long greaterUpTo = greater, equalUpTo = equal;
    warpInclusiveScan(greaterUpTo, equalUpTo);
    if (lane == 31) {
      warpBefore[0][warp] = greaterUpTo;
      warpBefore[1][warp] = equalUpTo;
    }
    __syncthreads();
    if (warp == 0) {
      unsigned long long g = warpBefore[0][lane], e = warpBefore[1][lane];
      unsigned long long gUpTo = g, eUpTo = e;
      warpInclusiveScan(gUpTo, eUpTo);
      warpBefore[0][lane] = carry[0] + gUpTo - g;
      warpBefore[1][lane] = carry[1] + eUpTo - e;
    }
    __syncthreads();
    const unsigned long long greaterBefore =
        warpBefore[0][warp] + greaterUpTo - greater;
    const unsigned long long equalBefore =
        warpBefore[1][warp] + equalUpTo - equal;
    if (t < tiles) {
      counts[2 * t] = greaterBefore;
      counts[2 * t + 1] = equalBefore;
    }
    __syncthreads();
    if (threadIdx.x == kScanThreads - 1) {
      carry[0] = greaterBefore + greater;
      carry[1] = equalBefore + equal;
    }
  }
}

/// Warps per block, and elements of a tile that each warp owns.
constexpr int kWarps = kThreads / 32;
constexpr int kWarpSpan = kTile / kWarps;

/// How many keys of [begin, end) are > threshold and == it, counted by
/// one warp with ballots (every lane gets the totals).
__device__ __forceinline__ void warpCount(const uint32_t *keys, int64_t begin,
                                          int64_t end, uint32_t threshold,
                                          unsigned int &greater,
                                          unsigned int &equal) {
  const int lane = threadIdx.x & 31;
  greater = 0;
  equal = 0;
  for (int64_t base = begin; base < end; base += 32) {
    const int64_t i = base + lane;
    const uint32_t key = i < end ? keys[i] : 0;
    greater += __popc(__ballot_sync(0xffffffffu, i < end && key > threshold));
    equal += __popc(__ballot_sync(0xffffffffu, i < end && key == threshold));
  }
}

/// The part of the tile that this thread's warp owns.
__device__ __forceinline__ void warpSpan(int64_t n, int64_t &begin,
                                         int64_t &end) {
  begin = int64_t(blockIdx.x) * kTile + (threadIdx.x / 32) * kWarpSpan;
  end = min(n, begin + kWarpSpan);
}

/// Per tile of kTile elements, and per warp span inside it: how many keys
/// are > threshold and == it. `warpCounts` keeps the spans' pairs so that
/// the write pass need not count again.
__global__ void countKernel(const uint32_t *keys, int64_t n,
                            const SelectState *state,
                            unsigned long long *tileCounts,
                            unsigned int *warpCounts) {
  const uint32_t threshold = state->prefix;
  __shared__ unsigned int sums[2][kWarps];
  int64_t begin, end;
  warpSpan(n, begin, end);
  unsigned int greater, equal;
  warpCount(keys, begin, end, threshold, greater, equal);
  const int warp = threadIdx.x / 32;
  if ((threadIdx.x & 31) == 0) {
    sums[0][warp] = greater;
    sums[1][warp] = equal;
    const int64_t span = int64_t(blockIdx.x) * kWarps + warp;
    warpCounts[2 * span] = greater;
    warpCounts[2 * span + 1] = equal;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long tileGreater = 0, tileEqual = 0;
    for (int w = 0; w < kWarps; ++w) {
      tileGreater += sums[0][w];
      tileEqual += sums[1][w];
    }
    tileCounts[2 * blockIdx.x] = tileGreater;
    tileCounts[2 * blockIdx.x + 1] = tileEqual;
  }
}

/// Writes the selected indices in ascending order: all keys > threshold
/// and the first `needEqual` keys == threshold (both from the state).
/// `tileOffsets` holds each tile's exclusive prefix of (greater, equal)
/// counts, `warpCounts` each warp span's own pair; each warp adds the
/// spans before it in its tile and writes its span with ballot prefixes.
/// No shared memory, no barrier.
__global__ void writeKernel(const uint32_t *keys, int64_t n,
                            const SelectState *state,
                            const unsigned long long *tileOffsets,
                            const unsigned int *warpCounts, int64_t *indices) {
  const uint32_t threshold = state->prefix;
  const unsigned long long needEqual = state->remaining;
  int64_t begin, end;
  warpSpan(n, begin, end);
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  unsigned long long greaterBefore = tileOffsets[2 * blockIdx.x];
  unsigned long long equalBefore = tileOffsets[2 * blockIdx.x + 1];
  for (int w = 0; w < warp; ++w) {
    const int64_t span = int64_t(blockIdx.x) * kWarps + w;
    greaterBefore += warpCounts[2 * span];
    equalBefore += warpCounts[2 * span + 1];
  }
  const unsigned int lanesBelow = (1u << lane) - 1;
  for (int64_t base = begin; base < end; base += 32) {
    const int64_t i = base + lane;
    const uint32_t key = i < end ? keys[i] : 0;
    const bool isGreater = i < end && key > threshold;
    const bool isEqual = i < end && key == threshold;
    const unsigned int greaterLanes = __ballot_sync(0xffffffffu, isGreater);
    const unsigned int equalLanes = __ballot_sync(0xffffffffu, isEqual);
    const unsigned long long equalRank =
        equalBefore + __popc(equalLanes & lanesBelow);
    if (isGreater || (isEqual && equalRank < needEqual))
      indices[greaterBefore + __popc(greaterLanes & lanesBelow) +
              min(equalRank, needEqual)] = i;
    greaterBefore += __popc(greaterLanes);
    equalBefore += __popc(equalLanes);
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

__global__ void scatterIntoShardKernel(float *shard, int64_t begin,
                                       const int64_t *indices,
                                       const float *values, int64_t k,
                                       float divisor) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x)
    shard[indices[j] - begin] =
        divisor == 1.0f ? values[j] : values[j] / divisor;
}

__global__ void scatterAddKernel(float *out, const int64_t *indices,
                                 const float *values, int64_t k) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x)
    out[indices[j]] += values[j];
}

/// The first thread to stamp an index's mark owns it: divides its sum
/// (when `divide`) and counts it, so each distinct index is divided and
/// counted once however many ranks sent it. One atomic add per warp.
__global__ void unionKernel(float *out, const int64_t *indices, int64_t count,
                            uint32_t *marks, uint32_t stamp, int divide,
                            float divisor, unsigned long long *distinct) {
  unsigned long long claimed = 0;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < count;
       j += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = indices[j];
    if (atomicExch(&marks[i], stamp) != stamp) {
      if (divide)
        out[i] = out[i] / divisor;
      ++claimed;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2)
    claimed += __shfl_down_sync(0xffffffffu, claimed, offset);
  if ((threadIdx.x & 31) == 0 && claimed != 0)
    atomicAdd(distinct, claimed);
}

/// Index j as `width` little-endian bytes: its offset inside chunk j
/// (j * chunkSize subtracted; chunkSize 0: the index itself), as the CPU
/// backend encodes it.
__global__ void narrowKernel(const int64_t *indices, int64_t k, int width,
                             int64_t chunkSize, uint8_t *wire) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t value = static_cast<uint64_t>(indices[j] - j * chunkSize);
    for (int b = 0; b < width; ++b)
      wire[j * width + b] = static_cast<uint8_t>(value >> (8 * b));
  }
}

__global__ void widenKernel(const uint8_t *wire, int64_t k, int width,
                            int64_t chunkSize, int64_t *indices) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x) {
    uint64_t value = 0;
    for (int b = 0; b < width; ++b)
      value |= static_cast<uint64_t>(wire[j * width + b]) << (8 * b);
    indices[j] = static_cast<int64_t>(value) + j * chunkSize;
  }
}

__global__ void mixKernel(float *x, const float *peer, int64_t n, float a,
                          float keep) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = keep * x[i] + a * peer[i];
}

__global__ void elasticDifferencesKernel(const float *x, const float *center,
                                         float *sum, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    sum[i] = x[i] - center[i];
}

__global__ void elasticUpdateKernel(float *x, float *center, const float *sum,
                                    int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float difference = x[i] - center[i];
    x[i] = x[i] - alpha * difference;
    center[i] = center[i] + alpha * sum[i];
  }
}

__global__ void divideKernel(float *x, int64_t n, float divisor) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = x[i] / divisor;
}

/// float32 -> bfloat16 bits, round to nearest even; a NaN stays a quiet
/// NaN with its upper payload: HalfFloat.h's toBfloat16, bit for bit.
__device__ __forceinline__ uint16_t toBfloat16(float value) {
  const uint32_t bits = __float_as_uint(value);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quietNan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNan
                                                                  : rounded);
}

/// float32 -> binary16 bits, round to nearest even (overflow to infinity);
/// a NaN keeps its sign and upper payload and turns quiet, as the CPU's
/// F16C conversion does (CUDA's own conversion returns one canonical NaN).
__device__ __forceinline__ uint16_t toHalf(float value) {
  const uint32_t bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7e00u |
                                 ((bits >> 13) & 0x3ffu));
  return __half_as_ushort(__float2half_rn(value));
}

/// binary16 bits -> float32, exact; a NaN keeps its sign and payload and
/// turns quiet, as the CPU's F16C conversion does (CUDA's own conversion
/// returns one canonical NaN, which the first run on a GPU caught).
__device__ __forceinline__ float fromHalf(uint16_t bits) {
  if ((bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0)
    return __uint_as_float((static_cast<uint32_t>(bits & 0x8000u) << 16) |
                           0x7fc00000u |
                           (static_cast<uint32_t>(bits & 0x3ffu) << 13));
  return __half2float(__ushort_as_half(bits));
}

__device__ __forceinline__ float fromWire(uint16_t bits, bool bfloat16) {
  return bfloat16 ? __uint_as_float(static_cast<uint32_t>(bits) << 16)
                  : fromHalf(bits);
}

__device__ __forceinline__ uint16_t toWire(float value, bool bfloat16) {
  return bfloat16 ? toBfloat16(value) : toHalf(value);
}

__global__ void narrowValuesKernel(const float *in, uint16_t *out, int64_t n,
                                   bool bfloat16) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = toWire(in[i], bfloat16);
}

__global__ void widenValuesKernel(const uint16_t *in, float *out, int64_t n,
                                  bool bfloat16) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = fromWire(in[i], bfloat16);
}

/// narrowValuesKernel 8 values at a time: two 16-byte loads, one 16-byte
/// store (the scalar kernel reached 0.63 of a copy's bandwidth on an H200,
/// this one a copy's). `in` and `out` 16-byte aligned; the tail goes one
/// value a thread.
__global__ void narrowValuesVectorKernel(const float4 *in, uint4 *out,
                                         int64_t groups, const float *tailIn,
                                         uint16_t *tailOut, int tail,
                                         bool bfloat16) {
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = first; i < groups; i += stride) {
    const float4 a = in[2 * i], b = in[2 * i + 1];
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    uint32_t packed[4];
    for (int j = 0; j < 4; ++j)
      packed[j] = uint32_t(toWire(v[2 * j], bfloat16)) |
                  (uint32_t(toWire(v[2 * j + 1], bfloat16)) << 16);
    out[i] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
  if (first < tail)
    tailOut[first] = toWire(tailIn[first], bfloat16);
}

/// widenValuesKernel 4 values at a time: one 8-byte load, one 16-byte
/// store, so a warp's stores cover one contiguous 512-byte span. `in`
/// 8-byte and `out` 16-byte aligned; the tail goes one value a thread.
__global__ void widenValuesVectorKernel(const uint2 *in, float4 *out,
                                        int64_t groups, const uint16_t *tailIn,
                                        float *tailOut, int tail,
                                        bool bfloat16) {
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = first; i < groups; i += stride) {
    const uint2 packed = in[i];
    out[i] = make_float4(fromWire(uint16_t(packed.x), bfloat16),
                         fromWire(uint16_t(packed.x >> 16), bfloat16),
                         fromWire(uint16_t(packed.y), bfloat16),
                         fromWire(uint16_t(packed.y >> 16), bfloat16));
  }
  if (first < tail)
    tailOut[first] = fromWire(tailIn[first], bfloat16);
}

/// The block's threads' values summed by a fixed tree (the same order on
/// every run); thread 0 gets the sum.
__device__ double blockSum(double value) {
  __shared__ double sums[kThreads];
  sums[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  return sums[0];
}

/// Each block's sum of g^2 in double over a fixed grid-stride share.
__global__ void sumOfSquaresKernel(const float *g, int64_t n,
                                   double *partials) {
  double sum = 0.0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    sum += double(g[i]) * double(g[i]);
  const double total = blockSum(sum);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = total;
}

/// partials[0] = the sum of the `count` (<= kThreads) partials.
__global__ void sumPartialsKernel(double *partials, int count) {
  const double total =
      blockSum(threadIdx.x < count ? partials[threadIdx.x] : 0.0);
  if (threadIdx.x == 0)
    partials[0] = total;
}

/// out = g scaled to an L2 norm of `clip` when sqrt(*squares) is above it
/// (the scale rounded to float once, as on the CPU), else g.
__global__ void clipKernel(const float *g, float *out, int64_t n, float clip,
                           const double *squares) {
  const double norm = sqrt(*squares);
  const float scale = norm > clip ? static_cast<float>(clip / norm) : 1.0f;
  const bool scaled = norm > clip;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = scaled ? g[i] * scale : g[i];
}

/// next = mu u + g; with `sent`, sent = g + mu next (Nesterov).
__global__ void velocityKernel(const float *u, const float *g, float *next,
                               float *sent, int64_t n, float mu) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = mu * u[i] + g[i];
    next[i] = v;
    if (sent)
      sent[i] = g[i] + mu * v;
  }
}

__global__ void zeroAtKernel(float *x, const int64_t *indices, int64_t k) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < k;
       j += int64_t(gridDim.x) * blockDim.x)
    x[indices[j]] = 0.0f;
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

cudaError_t anyNonFinite(const float *m, const float *g, int64_t n, float limit,
                         int *flag, bool *result, cudaStream_t stream) {
  GRADCOMM_CUDA_TRY(cudaMemsetAsync(flag, 0, sizeof(int), stream));
  nonFiniteKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(
      m, g, n, magnitudeKey(limit), flag);
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
  // Counters: the 256-bin histogram, the SelectState (two slots), a
  // (greater, equal) pair per tile, then a 32-bit pair per warp span.
  constexpr int64_t kStateSlot = 256, kTileSlot = 258;
  static_assert(sizeof(SelectState) == 2 * sizeof(unsigned long long));
  const int64_t tiles = (n + kTile - 1) / kTile;
  const int64_t warpSlot = kTileSlot + 2 * tiles;
  GRADCOMM_CUDA_TRY(grow(scratch.keys, scratch.keyCapacity, n));
  GRADCOMM_CUDA_TRY(grow(scratch.counters, scratch.counterCapacity,
                         warpSlot + tiles * kWarps));
  unsigned long long *histogram = scratch.counters;
  auto *state = reinterpret_cast<SelectState *>(scratch.counters + kStateSlot);
  unsigned long long *tileCounts = scratch.counters + kTileSlot;
  auto *warpCounts =
      reinterpret_cast<unsigned int *>(scratch.counters + warpSlot);
  // Histogram passes: at most eight blocks per multiprocessor, each
  // walking many keys, so that the blocks' flushes into the 256 global
  // counters stay few (one block per 2048 keys made them the bottleneck).
  int device = 0, multiprocessors = 0;
  GRADCOMM_CUDA_TRY(cudaGetDevice(&device));
  GRADCOMM_CUDA_TRY(cudaDeviceGetAttribute(
      &multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const int blocks =
      std::min(blocksFor(n, kThreads * 8), std::max(1, 8 * multiprocessors));

  // Radix select, most significant digit first, every step on the stream:
  // the exact k-th largest key and how many keys equal to it belong to the
  // top k end up in `state`. The first pass also writes the keys.
  GRADCOMM_CUDA_TRY(
      cudaMemsetAsync(histogram, 0, 256 * sizeof(unsigned long long), stream));
  for (int shift = 24; shift >= 0; shift -= 8) {
    if (shift == 24)
      keysAndTopDigitKernel<<<blocks, kThreads, 0, stream>>>(
          m, g, n, scratch.keys, histogram);
    else
      histogramKernel<<<blocks, kThreads, 0, stream>>>(scratch.keys, n, state,
                                                       shift, histogram);
    pickDigitKernel<<<1, kThreads, 0, stream>>>(histogram, state, shift, k);
  }

  // Ordered compaction: per-tile counts, their exclusive prefix, then the
  // ordered write.
  const int tileBlocks = static_cast<int>(tiles);
  countKernel<<<tileBlocks, kThreads, 0, stream>>>(scratch.keys, n, state,
                                                   tileCounts, warpCounts);
  scanTilesKernel<<<1, kScanThreads, 0, stream>>>(tileCounts, tiles);
  writeKernel<<<tileBlocks, kThreads, 0, stream>>>(
      scratch.keys, n, state, tileCounts, warpCounts, indices);
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

cudaError_t scatterIntoShard(float *shard, int64_t begin,
                             const int64_t *indices, const float *values,
                             int64_t k, float divisor, cudaStream_t stream) {
  if (k == 0)
    return cudaSuccess;
  scatterIntoShardKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(
      shard, begin, indices, values, k, divisor);
  return cudaGetLastError();
}

cudaError_t scatterAdd(float *out, const int64_t *indices, const float *values,
                       int64_t k, cudaStream_t stream) {
  scatterAddKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(
      out, indices, values, k);
  return cudaGetLastError();
}

cudaError_t divideUnion(float *out, const int64_t *indices, int64_t count,
                        bool divide, float divisor, uint32_t *marks,
                        uint32_t stamp, unsigned long long *distinct,
                        cudaStream_t stream) {
  cudaError_t cleared = cudaMemsetAsync(distinct, 0, sizeof(*distinct), stream);
  if (cleared != cudaSuccess)
    return cleared;
  unionKernel<<<blocksFor(count, kThreads), kThreads, 0, stream>>>(
      out, indices, count, marks, stamp, divide, divisor, distinct);
  return cudaGetLastError();
}

cudaError_t narrowIndices(const int64_t *indices, int64_t k, int width,
                          int64_t chunkSize, uint8_t *wire,
                          cudaStream_t stream) {
  narrowKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(
      indices, k, width, chunkSize, wire);
  return cudaGetLastError();
}

cudaError_t widenIndices(const uint8_t *wire, int64_t k, int width,
                         int64_t chunkSize, int64_t *indices,
                         cudaStream_t stream) {
  widenKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(
      wire, k, width, chunkSize, indices);
  return cudaGetLastError();
}

cudaError_t mix(float *x, const float *peer, int64_t n, float a,
                cudaStream_t stream) {
  mixKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(x, peer, n, a,
                                                                 1.0f - a);
  return cudaGetLastError();
}

cudaError_t narrowValues(const float *in, uint16_t *out, int64_t n,
                         bool bfloat16, cudaStream_t stream) {
  // Buffers at an offset (a shard's run on the wire) may be unaligned: the
  // scalar kernel serves them, with the same bits.
  if (!aligned16(in) || !aligned16(out)) {
    narrowValuesKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(
        in, out, n, bfloat16);
    return cudaGetLastError();
  }
  const int64_t groups = n / 8;
  const int tail = static_cast<int>(n - groups * 8);
  narrowValuesVectorKernel<<<blocksFor(groups, kThreads * 4), kThreads, 0,
                             stream>>>(
      reinterpret_cast<const float4 *>(in), reinterpret_cast<uint4 *>(out),
      groups, in + groups * 8, out + groups * 8, tail, bfloat16);
  return cudaGetLastError();
}

cudaError_t widenValues(const uint16_t *in, float *out, int64_t n,
                        bool bfloat16, cudaStream_t stream) {
  if (reinterpret_cast<uintptr_t>(in) % 8 != 0 || !aligned16(out)) {
    widenValuesKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(
        in, out, n, bfloat16);
    return cudaGetLastError();
  }
  const int64_t groups = n / 4;
  const int tail = static_cast<int>(n - groups * 4);
  widenValuesVectorKernel<<<blocksFor(groups, kThreads * 4), kThreads, 0,
                            stream>>>(
      reinterpret_cast<const uint2 *>(in), reinterpret_cast<float4 *>(out),
      groups, in + groups * 4, out + groups * 4, tail, bfloat16);
  return cudaGetLastError();
}

cudaError_t clipToNorm(const float *g, float *out, int64_t n, float clip,
                       double *scratch, cudaStream_t stream) {
  sumOfSquaresKernel<<<kNormBlocks, kThreads, 0, stream>>>(g, n, scratch);
  sumPartialsKernel<<<1, kThreads, 0, stream>>>(scratch, kNormBlocks);
  clipKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(
      g, out, n, clip, scratch);
  return cudaGetLastError();
}

cudaError_t velocityStep(const float *u, const float *g, float *next,
                         float *sent, int64_t n, float mu,
                         cudaStream_t stream) {
  velocityKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(
      u, g, next, sent, n, mu);
  return cudaGetLastError();
}

cudaError_t commitVelocity(float *u, const float *next, int64_t n,
                           const int64_t *indices, int64_t k,
                           cudaStream_t stream) {
  // The copy engine's path: a copy's bandwidth (the scalar copy kernel
  // reached 0.64 of it on an H200).
  if (cudaError_t error = cudaMemcpyAsync(u, next, sizeof(float) * n,
                                          cudaMemcpyDeviceToDevice, stream))
    return error;
  if (k > 0)
    zeroAtKernel<<<blocksFor(k, kThreads), kThreads, 0, stream>>>(u, indices,
                                                                  k);
  return cudaGetLastError();
}

cudaError_t elasticDifferences(const float *x, const float *center, float *sum,
                               int64_t n, cudaStream_t stream) {
  elasticDifferencesKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(
      x, center, sum, n);
  return cudaGetLastError();
}

cudaError_t elasticUpdate(float *x, float *center, const float *sum, int64_t n,
                          float alpha, cudaStream_t stream) {
  elasticUpdateKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(
      x, center, sum, n, alpha);
  return cudaGetLastError();
}

cudaError_t divide(float *x, int64_t n, float divisor, cudaStream_t stream) {
  divideKernel<<<blocksFor(n, kThreads * 8), kThreads, 0, stream>>>(x, n,
                                                                    divisor);
  return cudaGetLastError();
}

} // namespace gradcomm::cuda
