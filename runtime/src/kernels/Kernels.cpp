//===- Kernels.cpp - GradComm CPU kernels ---------------------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

using namespace gradcomm::cpu;

namespace {

/// |x| as its IEEE bits: for non-negative floats the unsigned order of the
/// bits is the numeric order (NaN sorts above Inf).
inline uint32_t magnitudeKey(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits & 0x7fffffffu;
}

/// Histogram on the top 15 significant bits (sign is always 0).
constexpr int kBucketShift = 16;
constexpr int64_t kNumBuckets = int64_t(1) << (31 - kBucketShift);

inline float accumulated(const float *m, const float *g, int64_t i) {
  return m[i] + g[i];
}

} // namespace

/// The hot kernels are compiled twice, for AVX2 and for baseline x86-64,
/// and the loader picks the best one the CPU has. No FMA is involved
/// (-ffp-contract=off), so both versions produce the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GRADCOMM_HOT_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define GRADCOMM_HOT_KERNEL
#endif

GRADCOMM_HOT_KERNEL
uint32_t gradcomm::cpu::maxMagnitudeKey(const float *g, int64_t n) {
  // Branch-free max so the loop vectorizes.
  uint32_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t key = magnitudeKey(g[i]);
    largest = key > largest ? key : largest;
  }
  return largest;
}

GRADCOMM_HOT_KERNEL
uint32_t gradcomm::cpu::maxMagnitudeKeySum(const float *m, const float *g,
                                           int64_t n) {
  uint32_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t key = magnitudeKey(m[i] + g[i]);
    largest = key > largest ? key : largest;
  }
  return largest;
}

GRADCOMM_HOT_KERNEL
uint32_t gradcomm::cpu::velocityAndMaxKeySum(const float *u, const float *g,
                                             float mu, const float *m,
                                             float *next, int64_t n) {
  uint32_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float velocity = mu * u[i] + g[i];
    next[i] = velocity;
    uint32_t key = magnitudeKey(m[i] + velocity);
    largest = key > largest ? key : largest;
  }
  return largest;
}

/// Picks the best k of the survivors (in ascending index order) and writes
/// their indices ascending. The k-th largest key is found on a copy of the
/// keys alone; every survivor above it is taken, and of those equal to it
/// the lowest indices (ties go to the lower index), in one in-order pass,
/// so no sort.
static void takeBest(const std::vector<uint32_t> &keys,
                     const std::vector<int64_t> &survivorIndices, int64_t count,
                     std::vector<uint32_t> &keyCopy, int64_t k,
                     int64_t *indices) {
  keyCopy.assign(keys.begin(), keys.begin() + count);
  std::nth_element(keyCopy.begin(), keyCopy.begin() + (k - 1), keyCopy.end(),
                   std::greater<uint32_t>());
  const uint32_t cutoff = keyCopy[k - 1];
  // Everything above the cutoff is among the first k - 1 after the
  // partition: the rest of the k are ties at the cutoff.
  int64_t above = 0;
  for (int64_t j = 0; j < k - 1; ++j)
    above += keyCopy[j] > cutoff;
  int64_t tiesLeft = k - above, out = 0;
  for (int64_t j = 0; j < count; ++j) {
    const uint32_t key = keys[j];
    if (key > cutoff || (key == cutoff && tiesLeft-- > 0))
      indices[out++] = survivorIndices[j];
  }
}

/// The top k when `nonZeros` (ascending, `count` of them) are all the
/// elements with a non-zero key and there are fewer than k of them: all of
/// them plus the k - count lowest indices not among them, merged in
/// ascending order.
static void takeNonZerosAndFirstZeros(const int64_t *nonZeros, int64_t count,
                                      int64_t n, int64_t k, int64_t *indices) {
  int64_t zerosLeft = k - count;
  int64_t out = 0, next = 0;
  for (int64_t i = 0; i < n && out < k; ++i) {
    if (next < count && nonZeros[next] == i) {
      indices[out++] = i;
      ++next;
    } else if (zerosLeft > 0) {
      indices[out++] = i;
      --zerosLeft;
    } else {
      // Only non-zeros are left to take: jump to them.
      for (; next < count; ++next)
        indices[out++] = nonZeros[next];
    }
  }
}

/// Radix select (see selectExact).
static uint32_t selectExactRadix(const float *m, const float *g, int64_t n,
                                 int64_t k, int64_t *indices,
                                 SelectScratch &scratch);

GRADCOMM_HOT_KERNEL
uint32_t gradcomm::cpu::selectExact(const float *m, const float *g, int64_t n,
                                    int64_t k, int64_t *indices,
                                    SelectScratch &scratch) {
  if (n <= kDirectSelectMaxElements) {
    // Every element is a survivor: the radix select's 32K-bucket histogram
    // would cost more than the input (14 us for 100 elements).
    std::vector<uint32_t> &keys = scratch.survivorKeys;
    std::vector<int64_t> &all = scratch.survivorIndices;
    keys.resize(n);
    all.resize(n);
    uint32_t largest = 0;
    for (int64_t i = 0; i < n; ++i) {
      keys[i] = magnitudeKey(m[i] + g[i]);
      largest = keys[i] > largest ? keys[i] : largest;
      all[i] = i;
    }
    takeBest(keys, all, n, scratch.keyCopy, k, indices);
    return largest;
  }
  if (n < kSampledSelectMinElements)
    return selectExactRadix(m, g, n, k, indices, scratch);

  // Sample: contiguous blocks spread evenly, so reading them is cheap.
  std::vector<uint32_t> &sample = scratch.sample;
  const int64_t blockLength = sampleBlockLength(n);
  sample.resize(kSampleBlocks * blockLength);
  for (int64_t block = 0; block < kSampleBlocks; ++block) {
    const float *mb = m + block * (n / kSampleBlocks);
    const float *gb = g + block * (n / kSampleBlocks);
    uint32_t *keys = sample.data() + block * blockLength;
    for (int64_t i = 0; i < blockLength; ++i)
      keys[i] = magnitudeKey(mb[i] + gb[i]);
  }
  // Aim for 1.2 k survivors plus a few standard deviations of slack.
  const double expected = static_cast<double>(k) * sample.size() / n;
  int64_t rank =
      static_cast<int64_t>(1.2 * expected + 3.0 * std::sqrt(expected) + 8.0);
  rank = std::min<int64_t>(rank, static_cast<int64_t>(sample.size()));
  std::nth_element(sample.begin(), sample.begin() + (rank - 1), sample.end(),
                   std::greater<uint32_t>());
  // A sparse gradient (fewer than k non-zeros in the sample) would give
  // threshold 0 and make every element a candidate: collect the non-zeros
  // only, and complete with the first zeros if there are fewer than k.
  const bool sparse = sample[rank - 1] == 0;
  const uint32_t threshold = sparse ? 1 : sample[rank - 1];

  // Blocks of 16: a branch-free maximum that vectorizes (keys compared as
  // int32, the sign bit being clear) tells whether any key of the block
  // reaches the threshold; only those few blocks are collected, with
  // branch-free stores (the slot is always written, the count advances on
  // a survivor).
  constexpr int64_t kBlock = 16;
  std::vector<uint32_t> &keys = scratch.survivorKeys;
  std::vector<int64_t> &survivors = scratch.survivorIndices;
  // Room for `needed` survivors (doubling, so rare on the hot path).
  auto reserveSurvivors = [&](size_t needed) {
    if (keys.size() >= needed)
      return;
    keys.resize(std::max(needed, 2 * keys.size()));
    survivors.resize(keys.size());
  };
  reserveSurvivors(static_cast<size_t>(1.5 * k) + kBlock);
  const int32_t limit = static_cast<int32_t>(threshold);
  int32_t largest = 0;
  int64_t count = 0, i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    const float *__restrict mb = m + i;
    const float *__restrict gb = g + i;
    int32_t blockLargest = 0;
    // Not unrolled, so GCC vectorizes it as a loop (fully unrolled, its
    // straight-line code stays scalar).
#pragma GCC unroll 1
    for (int64_t j = 0; j < kBlock; ++j) {
      // m + g, not g: a finite gradient that overflows the memory counts.
      int32_t key = static_cast<int32_t>(magnitudeKey(mb[j] + gb[j]));
      blockLargest = key > blockLargest ? key : blockLargest;
    }
    largest = blockLargest > largest ? blockLargest : largest;
    if (blockLargest < limit)
      continue;
    reserveSurvivors(static_cast<size_t>(count + kBlock));
    for (int64_t j = 0; j < kBlock; ++j) {
      uint32_t key = magnitudeKey(mb[j] + gb[j]);
      keys[count] = key;
      survivors[count] = i + j;
      count += key >= threshold;
    }
  }
  for (; i < n; ++i) {
    uint32_t key = magnitudeKey(m[i] + g[i]);
    largest = std::max(largest, static_cast<int32_t>(key));
    if (key < threshold)
      continue;
    reserveSurvivors(static_cast<size_t>(count + 1));
    keys[count] = key;
    survivors[count++] = i;
  }
  if (count < k) {
    if (!sparse)
      return selectExactRadix(m, g, n, k, indices, scratch);
    // Every non-zero is a survivor and belongs to the top k; the rest are
    // the lowest-index zeros (ties go to the lower index).
    takeNonZerosAndFirstZeros(survivors.data(), count, n, k, indices);
    return static_cast<uint32_t>(largest);
  }
  takeBest(keys, survivors, count, scratch.keyCopy, k, indices);
  return static_cast<uint32_t>(largest);
}

static uint32_t selectExactRadix(const float *m, const float *g, int64_t n,
                                 int64_t k, int64_t *indices,
                                 SelectScratch &scratch) {
  std::vector<int64_t> &histogram = scratch.histogram;
  histogram.assign(kNumBuckets, 0);
  uint32_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t key = magnitudeKey(accumulated(m, g, i));
    largest = key > largest ? key : largest;
    ++histogram[key >> kBucketShift];
  }

  // Threshold bucket: everything above it is selected, the rest of the k
  // comes from inside it.
  int64_t threshold = kNumBuckets - 1, countAbove = 0;
  for (; threshold > 0; --threshold) {
    if (countAbove + histogram[threshold] >= k)
      break;
    countAbove += histogram[threshold];
  }

  std::vector<int64_t> &above = scratch.above;
  auto &candidates = scratch.candidates;
  above.clear();
  candidates.clear();
  above.reserve(countAbove);
  candidates.reserve(histogram[threshold]);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t key = magnitudeKey(accumulated(m, g, i));
    int64_t bucket = key >> kBucketShift;
    if (bucket > threshold)
      above.push_back(i);
    else if (bucket == threshold)
      candidates.push_back({key, i});
  }

  // Larger key first; equal keys: lower index first.
  int64_t fromBucket = k - countAbove;
  auto better = [](const std::pair<uint32_t, int64_t> &a,
                   const std::pair<uint32_t, int64_t> &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  if (fromBucket < static_cast<int64_t>(candidates.size()))
    std::nth_element(candidates.begin(), candidates.begin() + fromBucket,
                     candidates.end(), better);

  // Merge the two ascending index lists.
  std::sort(candidates.begin(), candidates.begin() + fromBucket,
            [](const auto &a, const auto &b) { return a.second < b.second; });
  int64_t a = 0, c = 0, out = 0;
  while (a < countAbove || c < fromBucket) {
    if (c == fromBucket || (a < countAbove && above[a] < candidates[c].second))
      indices[out++] = above[a++];
    else
      indices[out++] = candidates[c++].second;
  }
  return largest;
}

/// Index of the top-1 of |m + g| in [begin, end), ties to the lower index.
/// Two branch-free reductions over the (L1-resident) chunk, both of which
/// vectorize: the max key, then the min offset holding it. Keys and offsets
/// are int32 (the sign bit of a key is clear: same order as unsigned).
static int64_t chunkArgmax(const float *m, const float *g, int64_t begin,
                           int64_t end) {
  const float *mc = m + begin, *gc = g + begin;
  const int32_t length = static_cast<int32_t>(end - begin);
  int32_t maxKey = 0;
  for (int32_t i = 0; i < length; ++i) {
    int32_t key = static_cast<int32_t>(magnitudeKey(mc[i] + gc[i]));
    maxKey = key > maxKey ? key : maxKey;
  }
  int32_t first = length;
  for (int32_t i = 0; i < length; ++i) {
    int32_t key = static_cast<int32_t>(magnitudeKey(mc[i] + gc[i]));
    int32_t candidate = key == maxKey ? i : length;
    first = candidate < first ? candidate : first;
  }
  return begin + first;
}

GRADCOMM_HOT_KERNEL
void gradcomm::cpu::selectChunk(const float *m, const float *g, int64_t n,
                                int64_t chunkSize, int64_t *indices) {
  int64_t chunk = 0;
  for (int64_t begin = 0; begin < n; begin += chunkSize, ++chunk)
    indices[chunk] = chunkArgmax(m, g, begin, std::min(n, begin + chunkSize));
}

/// m = m + beta * g (and out = 0) on [begin, end): the run between
/// selected indices. Restrict pointers let it vectorize without alias
/// checks.
static inline void updateRun(float *__restrict m, const float *__restrict g,
                             float *__restrict out, int64_t begin, int64_t end,
                             float beta) {
  if (out) {
    for (int64_t i = begin; i < end; ++i) {
      m[i] = m[i] + beta * g[i];
      out[i] = 0.0f;
    }
    return;
  }
  for (int64_t i = begin; i < end; ++i)
    m[i] = m[i] + beta * g[i];
}

GRADCOMM_HOT_KERNEL
void gradcomm::cpu::selectChunkAndUpdate(float *m, const float *g, int64_t n,
                                         int64_t chunkSize, float beta,
                                         int64_t *indices, float *values,
                                         float *out) {
  const float keep = 1.0f - beta;
  int64_t chunk = 0;
  for (int64_t begin = 0; begin < n; begin += chunkSize, ++chunk) {
    int64_t end = std::min(n, begin + chunkSize);
    int64_t best = chunkArgmax(m, g, begin, end);
    indices[chunk] = best;
    // The chunk is still in L1: one plain loop updates all of it, then the
    // selected element is set from its saved old memory.
    const float selectedMemory = m[best];
    values[chunk] = selectedMemory + g[best];
    updateRun(m, g, out, begin, end, beta);
    m[best] = keep * selectedMemory;
  }
}

void gradcomm::cpu::gather(const float *m, const float *g,
                           const int64_t *indices, int64_t k, float *values) {
  for (int64_t j = 0; j < k; ++j)
    values[j] = m[indices[j]] + g[indices[j]];
}

GRADCOMM_HOT_KERNEL
void gradcomm::cpu::gatherAndUpdate(float *m, const float *g, int64_t n,
                                    const int64_t *indices, int64_t k,
                                    float beta, float *values, float *out) {
  const float keep = 1.0f - beta;
  int64_t begin = 0;
  // Streams the runs between selected indices; each run is a plain
  // vectorizable loop.
  for (int64_t j = 0; j < k; ++j) {
    const int64_t selected = indices[j];
    updateRun(m, g, out, begin, selected, beta);
    if (values)
      values[j] = m[selected] + g[selected];
    m[selected] = keep * m[selected];
    if (out)
      out[selected] = 0.0f;
    begin = selected + 1;
  }
  updateRun(m, g, out, begin, n, beta);
}

void gradcomm::cpu::scatter(float *out, const int64_t *indices,
                            const float *values, int64_t k) {
  for (int64_t j = 0; j < k; ++j)
    out[indices[j]] = values[j];
}

GRADCOMM_HOT_KERNEL
void gradcomm::cpu::mix(float *x, const float *peer, int64_t n, float a) {
  const float keep = 1.0f - a;
  for (int64_t i = 0; i < n; ++i)
    x[i] = keep * x[i] + a * peer[i];
}
