//===- Kernels.h - GradComm CPU kernels -------------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Streaming host kernels of ScaleCom, the local top-k baseline and gossip.
// Pure functions on host arrays (no MPI, no state), so they are unit-tested
// alone and the CUDA backend can be checked against them bit for bit.
//
// Floating-point contract: the runtime is compiled with -ffp-contract=off,
// so `m + beta * g` is two rounded operations on every build.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_CPU_KERNELS_H
#define GRADCOMM_RUNTIME_CPU_KERNELS_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace gradcomm::cpu {

/// Reusable buffers of the exact selection, so steady-state calls do not
/// allocate.
struct SelectScratch {
  std::vector<int64_t> histogram;
  std::vector<int64_t> above;
  std::vector<std::pair<uint32_t, int64_t>> candidates;
  std::vector<uint32_t> sample;
  /// The sampled path's survivors, in index order, as two arrays: the
  /// cutoff search then works on 4-byte keys alone.
  std::vector<uint32_t> survivorKeys;
  std::vector<int64_t> survivorIndices;
  std::vector<uint32_t> keyCopy;
};

/// Exact selection on inputs of at least this many elements first tries a
/// threshold estimated from a sample (one streaming pass); smaller inputs,
/// and the rare sample that overestimates the threshold, take the radix
/// select (two passes).
inline constexpr int64_t kSampledSelectMinElements = int64_t(1) << 16;
/// Up to this many elements, every key is a candidate: the k-th largest is
/// found on the keys alone and one in-order pass takes the k (the radix
/// select's fixed cost, a 32K-bucket histogram, dominates below it).
inline constexpr int64_t kDirectSelectMaxElements = 4096;
/// The sample is this many contiguous blocks, block j starting at
/// j * (n / kSampleBlocks), of sampleBlockLength(n) elements each.
inline constexpr int64_t kSampleBlocks = 64;

/// One sample block's length: 1/64 of the input below 4M elements, 1/256
/// from there (a sample of 16K elements or more already puts the threshold
/// within a few percent of its target, and sorting a larger one costs more
/// than the survivors it saves).
inline int64_t sampleBlockLength(int64_t n) {
  const int64_t fraction = n >= (int64_t(1) << 22) ? 256 : 64;
  return n / fraction / kSampleBlocks;
}

/// The largest |g[i]| as its IEEE bits (NaN above Inf above every finite
/// value): the non-finite scan compares it with the policy's limit
/// (exceedsLimit).
uint32_t maxMagnitudeKey(const float *g, int64_t n);

/// The same for m[i] + g[i]: a finite gradient that would overflow the
/// error-feedback memory shows up as Inf.
uint32_t maxMagnitudeKeySum(const float *m, const float *g, int64_t n);

/// Momentum correction's velocity with the non-finite scan in its pass:
/// next[i] = mu * u[i] + g[i] (rounded as written), and returns the
/// largest |m[i] + next[i]| as maxMagnitudeKeySum(m, next, n) does, so a
/// rank that scans before its agreement reads u, g and m once instead of
/// writing next and reading it back with m.
uint32_t velocityAndMaxKeySum(const float *u, const float *g, float mu,
                              const float *m, float *next, int64_t n);

/// True when a maximum magnitude key is above |limit|: NaN, Inf or a
/// finite value larger than the limit.
inline bool exceedsLimit(uint32_t maxKey, float limit) {
  uint32_t limitKey;
  std::memcpy(&limitKey, &limit, sizeof(limitKey));
  return maxKey > (limitKey & 0x7fffffffu);
}

/// Exact top-k of |m + g|: writes the k indices in
/// ascending order. Ties go to the lower index. Not a sort: a threshold T
/// is estimated from a sample, one streaming pass collects every element
/// with |p| >= T (about 1.2 k of them), and a partial sort of those picks
/// the k. The result is exact whatever the sample: if fewer than k pass,
/// a radix select on the float bits (histogram pass, collection pass,
/// partial sort of the threshold bucket) decides. Returns the largest
/// |m + g| as maxMagnitudeKeySum does (the scan rides on the selection).
uint32_t selectExact(const float *m, const float *g, int64_t n, int64_t k,
                     int64_t *indices, SelectScratch &scratch);

/// Top-1 of |m + g| in each chunk of `chunkSize` consecutive elements (the
/// last chunk may be shorter), ties to the lower index: ceil(n / chunkSize)
/// indices, ascending, in one streaming pass.
void selectChunk(const float *m, const float *g, int64_t n, int64_t chunkSize,
                 int64_t *indices);

/// The leader's fused chunk path, one stream over m and g: selectChunk and
/// gatherAndUpdate in a single DRAM pass (each chunk is selected, then
/// updated while it is still in L1). Same results, bit for bit.
void selectChunkAndUpdate(float *m, const float *g, int64_t n,
                          int64_t chunkSize, float beta, int64_t *indices,
                          float *values, float *out);

/// values[j] = m[I_j] + g[I_j] for ascending indices I (no update).
void gather(const float *m, const float *g, const int64_t *indices, int64_t k,
            float *values);

/// The fused ScaleCom memory pass, one stream over m and g (and out):
///   at I:      values[j] = m + g;  m = (1 - beta) * m
///   elsewhere: m = m + beta * g
/// and out = 0 everywhere when `out` is not null. `values` may be null.
/// Indices must be ascending.
void gatherAndUpdate(float *m, const float *g, int64_t n,
                     const int64_t *indices, int64_t k, float beta,
                     float *values, float *out);

/// out[I_j] = values[j].
void scatter(float *out, const int64_t *indices, const float *values,
             int64_t k);

/// x = (1 - a) * x + a * peer.
void mix(float *x, const float *peer, int64_t n, float a);

} // namespace gradcomm::cpu

#endif // GRADCOMM_RUNTIME_CPU_KERNELS_H
