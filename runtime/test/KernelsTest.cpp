//===- KernelsTest.cpp - CPU kernels and schedules against references -----===//
//
// Part of the GradComm project.
//
// Single process, no MPI: the kernels and peer schedules are pure
// functions, compared with straightforward references written here.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "HalfFloat.h"
#include "IndexCoding.h"
#include "Schedule.h"
#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>

using namespace gradcomm;
using namespace gradcomm::test;

namespace {

/// Reference exact top-k: full sort by (|p| desc, index asc).
std::vector<int64_t> referenceTopk(const std::vector<float> &m,
                                   const std::vector<float> &g, int64_t k) {
  std::vector<int64_t> order(g.size());
  std::iota(order.begin(), order.end(), 0);
  auto magnitude = [&](int64_t i) { return std::fabs(m[i] + g[i]); };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return magnitude(a) > magnitude(b);
  });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<int64_t> runExact(const std::vector<float> &m,
                              const std::vector<float> &g, int64_t k) {
  std::vector<int64_t> indices(k);
  cpu::SelectScratch scratch;
  cpu::selectExact(m.data(), g.data(), static_cast<int64_t>(g.size()), k,
                   indices.data(), scratch);
  return indices;
}

TEST(SelectExact, MatchesFullSortOnRandomData) {
  // Every path: all keys as candidates (up to kDirectSelectMaxElements),
  // the radix select (below kSampledSelectMinElements), the sample.
  for (int64_t n :
       {int64_t(1), int64_t(5), int64_t(100), cpu::kDirectSelectMaxElements,
        cpu::kDirectSelectMaxElements + 1, int64_t(100000)}) {
    std::vector<float> m = gradient(1, 0, 0, n), g = gradient(2, 0, 0, n);
    for (int64_t k : {int64_t(1), n / 3 + 1, n}) {
      EXPECT_EQ(runExact(m, g, k), referenceTopk(m, g, k))
          << "n " << n << " k " << k;
    }
  }
}

TEST(SelectExact, TiesGoToTheLowerIndex) {
  std::vector<float> m(1000, 0.0f), g(1000, 0.5f);
  g[700] = -0.5f; // same magnitude
  std::vector<int64_t> expected(10);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(runExact(m, g, 10), expected);
  // Sign does not matter, magnitude does.
  g[999] = -2.0f;
  std::vector<int64_t> got = runExact(m, g, 3);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 999}));
}

TEST(SelectExact, ManyValuesInOneBucket) {
  // Values that share their top bits, so the threshold bucket holds most of
  // the input and the partial sort does the work.
  const int64_t n = 50000;
  std::vector<float> m(n, 0.0f), g(n);
  for (int64_t i = 0; i < n; ++i)
    g[i] = 1.0f + static_cast<float>(i % 97) * 1e-7f;
  EXPECT_EQ(runExact(m, g, 777), referenceTopk(m, g, 777));
}

TEST(SelectExact, SampledPathMatchesFullSort) {
  // Large enough for the sampled threshold; several k, and data whose
  // large values sit in one region.
  const int64_t n = 3 * cpu::kSampledSelectMinElements + 17;
  std::vector<float> m = gradient(11, 0, 0, n), g = gradient(12, 0, 0, n);
  for (int64_t i = n / 3; i < n / 3 + 500; ++i)
    g[i] *= 50.0f;
  for (int64_t k : {int64_t(1), int64_t(100), n / 100, n / 7})
    EXPECT_EQ(runExact(m, g, k), referenceTopk(m, g, k)) << "k " << k;
}

TEST(SelectExact, SampledPathBreaksTiesByIndex) {
  // Seven distinct magnitudes over the whole input: the cutoff key is
  // shared by thousands of survivors, and only the lowest indices of those
  // may be taken.
  const int64_t n = 3 * cpu::kSampledSelectMinElements + 5;
  std::vector<float> m(n, 0.0f), g(n);
  for (int64_t i = 0; i < n; ++i)
    g[i] = static_cast<float>((i * 5) % 7) * ((i % 2) ? -0.25f : 0.25f);
  for (int64_t k : {int64_t(10), n / 100, n / 7 + 3, n / 2})
    EXPECT_EQ(runExact(m, g, k), referenceTopk(m, g, k)) << "k " << k;
}

TEST(SelectExact, SmallerSampleOnLargeInputs) {
  // From 4M elements the sample is 1/256 of the input.
  const int64_t n = (int64_t(1) << 22) + 3;
  ASSERT_LT(cpu::sampleBlockLength(n) * cpu::kSampleBlocks, n / 200);
  std::vector<float> m = gradient(14, 0, 0, n), g = gradient(15, 0, 0, n);
  EXPECT_EQ(runExact(m, g, n / 100), referenceTopk(m, g, n / 100));
}

TEST(SelectExact, MisleadingSampleFallsBackAndStaysExact) {
  // Big values exactly where the sample looks: the estimated threshold is
  // too high, fewer than k survive, and the radix select must take over.
  const int64_t n = 2 * cpu::kSampledSelectMinElements;
  std::vector<float> m(n, 0.0f), g = gradient(13, 0, 0, n);
  const int64_t blockLength = cpu::sampleBlockLength(n);
  for (int64_t block = 0; block < cpu::kSampleBlocks; ++block)
    for (int64_t j = 0; j < blockLength; ++j)
      g[block * (n / cpu::kSampleBlocks) + j] += 100.0f;
  const int64_t k = n / 2;
  EXPECT_EQ(runExact(m, g, k), referenceTopk(m, g, k));
}

TEST(SelectExact, SparseGradients) {
  // Fewer non-zeros than k (the rest of the top k: the first zeros), and
  // more non-zeros than k that the sample does not see (they lie between
  // the sampled blocks): both exact, neither a pass over every element as
  // a candidate.
  // The collection pass works in blocks of 16: 200037 leaves a tail of 5,
  // which holds the largest value.
  for (int64_t n : {int64_t(200000), int64_t(200037)})
    for (int64_t nonZeros : {int64_t(50), int64_t(3000)}) {
      std::vector<float> m(n, 0.0f), g(n, 0.0f);
      std::vector<float> values = gradient(31, 0, 0, nonZeros);
      const int64_t blockLength = cpu::sampleBlockLength(n);
      const int64_t stride = n / cpu::kSampleBlocks;
      for (int64_t j = 0; j < nonZeros; ++j) {
        // Past each sampled block, inside the gap before the next one.
        int64_t block = j % cpu::kSampleBlocks, slot = j / cpu::kSampleBlocks;
        g[block * stride + blockLength + 1 + slot] = values[j];
      }
      g[n - 1] = -0.0f; // a zero all the same
      g[n - 3] = 9.0f;  // above every value of `gradient`
      for (int64_t k : {int64_t(1), int64_t(1000), n}) {
        EXPECT_EQ(runExact(m, g, k), referenceTopk(m, g, k))
            << n << " elements, " << nonZeros << " non-zeros, k " << k;
      }
      std::vector<int64_t> indices(1000);
      cpu::SelectScratch scratch;
      EXPECT_EQ(cpu::selectExact(m.data(), g.data(), n, 1000, indices.data(),
                                 scratch),
                cpu::maxMagnitudeKeySum(m.data(), g.data(), n));
    }
}

TEST(SelectExact, ReportsTheLargestMagnitude) {
  // Both selection paths (radix below kSampledSelectMinElements, sampled
  // above) report the largest |m + g| as the scans do.
  for (int64_t n : {int64_t(64), cpu::kSampledSelectMinElements * 2}) {
    std::vector<float> m(n, 0.0f), g = gradient(3, 0, 0, n);
    std::vector<int64_t> indices(4);
    cpu::SelectScratch scratch;
    uint32_t clean =
        cpu::selectExact(m.data(), g.data(), n, 4, indices.data(), scratch);
    EXPECT_EQ(clean, cpu::maxMagnitudeKeySum(m.data(), g.data(), n));
    EXPECT_FALSE(cpu::exceedsLimit(clean, 1e30f));
    g[17] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(cpu::exceedsLimit(
        cpu::selectExact(m.data(), g.data(), n, 4, indices.data(), scratch),
        std::numeric_limits<float>::max()));
    // Finite gradient, finite memory, infinite sum.
    g[17] = 3e38f;
    m[17] = 3e38f;
    EXPECT_TRUE(cpu::exceedsLimit(
        cpu::selectExact(m.data(), g.data(), n, 4, indices.data(), scratch),
        std::numeric_limits<float>::max()));
  }
}

TEST(NonFiniteScan, ComparesWithTheLimit) {
  std::vector<float> g = gradient(3, 0, 0, 1000);
  const float max = std::numeric_limits<float>::max();
  EXPECT_FALSE(cpu::exceedsLimit(cpu::maxMagnitudeKey(g.data(), 1000), max));
  g[999] = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(cpu::exceedsLimit(cpu::maxMagnitudeKey(g.data(), 1000), max));
  // Finite but too large for the sum of 4 ranks: above FLT_MAX / 8.
  g[999] = -max / 4;
  EXPECT_FALSE(cpu::exceedsLimit(cpu::maxMagnitudeKey(g.data(), 1000), max));
  EXPECT_TRUE(cpu::exceedsLimit(cpu::maxMagnitudeKey(g.data(), 1000), max / 8));
  g[999] = max / 8;
  EXPECT_FALSE(
      cpu::exceedsLimit(cpu::maxMagnitudeKey(g.data(), 1000), max / 8));
}

TEST(NonFiniteScan, VelocityPassEqualsVelocityThenScan) {
  // The fused pass writes the same u' bits and reports the same key as
  // the velocity loop followed by maxMagnitudeKeySum, clean and with a
  // NaN, an Inf, and a finite u' whose sum with the memory overflows.
  const int64_t n = 1003; // not a multiple of any vector width
  const float mu = 0.9f, max = std::numeric_limits<float>::max();
  std::vector<float> u = gradient(5, 0, 0, n), g = gradient(6, 0, 0, n);
  std::vector<float> m = gradient(7, 0, 0, n);
  auto check = [&](const char *what) {
    std::vector<float> expected(n), fused(n);
    for (int64_t i = 0; i < n; ++i)
      expected[i] = mu * u[i] + g[i];
    const uint32_t key = cpu::velocityAndMaxKeySum(u.data(), g.data(), mu,
                                                   m.data(), fused.data(), n);
    EXPECT_EQ(0, std::memcmp(expected.data(), fused.data(), n * 4)) << what;
    EXPECT_EQ(key, cpu::maxMagnitudeKeySum(m.data(), expected.data(), n))
        << what;
    return cpu::exceedsLimit(key, max);
  };
  EXPECT_FALSE(check("clean"));
  g[n - 1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(check("NaN gradient"));
  g[n - 1] = 0.0f;
  u[0] = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(check("infinite velocity"));
  u[0] = 0.0f;
  m[500] = max;
  g[500] = max / 2;
  EXPECT_TRUE(check("finite velocity, infinite sum"));
}

TEST(SelectChunk, TopOnePerChunkLowerIndexOnTies) {
  const int64_t n = 1003, chunk = 10;
  std::vector<float> m = gradient(4, 0, 0, n), g = gradient(5, 0, 0, n);
  g[20] = 5.0f;
  g[25] = -5.0f; // tie inside chunk 2 (m cancels: set m too)
  m[20] = 0.0f;
  m[25] = 0.0f;
  int64_t k = (n + chunk - 1) / chunk;
  std::vector<int64_t> indices(k);
  cpu::selectChunk(m.data(), g.data(), n, chunk, indices.data());
  for (int64_t c = 0; c < k; ++c) {
    int64_t begin = c * chunk, end = std::min(n, begin + chunk);
    int64_t best = begin;
    for (int64_t i = begin; i < end; ++i)
      if (std::fabs(m[i] + g[i]) > std::fabs(m[best] + g[best]))
        best = i;
    EXPECT_EQ(indices[c], best) << "chunk " << c;
  }
  EXPECT_EQ(indices[2], 20);
}

TEST(SelectChunkAndUpdate, EqualsSelectThenUpdate) {
  for (int64_t chunk : {1, 7, 64, 1000}) {
    const int64_t n = 4321, k = (n + chunk - 1) / chunk;
    std::vector<float> m = gradient(9, 0, 0, n), g = gradient(9, 1, 0, n);
    std::vector<float> m1 = m, values1(k), out1(n, 5.0f);
    std::vector<int64_t> indices1(k);
    cpu::selectChunk(m1.data(), g.data(), n, chunk, indices1.data());
    cpu::gatherAndUpdate(m1.data(), g.data(), n, indices1.data(), k, 0.3f,
                         values1.data(), out1.data());
    std::vector<float> m2 = m, values2(k), out2(n, 5.0f);
    std::vector<int64_t> indices2(k);
    cpu::selectChunkAndUpdate(m2.data(), g.data(), n, chunk, 0.3f,
                              indices2.data(), values2.data(), out2.data());
    EXPECT_EQ(indices2, indices1) << "chunk " << chunk;
    EXPECT_EQ(values2, values1);
    EXPECT_EQ(m2, m1);
    EXPECT_EQ(out2, out1);
  }
}

TEST(GatherAndUpdate, ElementwiseLowPassForm) {
  const int64_t n = 257;
  std::vector<float> m = gradient(6, 0, 0, n), g = gradient(7, 0, 0, n);
  std::vector<int64_t> indices = {0, 3, 4, 100, 256};
  for (float beta : {1.0f, 0.5f, 0.1f}) {
    std::vector<float> mem = m, values(indices.size()), out(n, 7.0f);
    cpu::gatherAndUpdate(mem.data(), g.data(), n, indices.data(),
                         static_cast<int64_t>(indices.size()), beta,
                         values.data(), out.data());
    std::set<int64_t> selected(indices.begin(), indices.end());
    size_t j = 0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(out[i], 0.0f);
      if (selected.count(i)) {
        EXPECT_EQ(values[j++], m[i] + g[i]);
        EXPECT_EQ(mem[i], (1.0f - beta) * m[i]);
      } else {
        EXPECT_EQ(mem[i], m[i] + beta * g[i]);
      }
    }
    if (beta == 1.0f) {
      // Plain error feedback: m = p - c exactly.
      for (int64_t i = 0; i < n; ++i) {
        float p = m[i] + g[i];
        EXPECT_EQ(mem[i], selected.count(i) ? 0.0f : p);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Index coding
//===----------------------------------------------------------------------===//

/// Encodes, checks the size, decodes: the same indices.
std::vector<uint8_t> roundTrip(const IndexCoding &coding,
                               const std::vector<int64_t> &indices) {
  std::vector<uint8_t> bytes(coding.bytes(), 0xAB);
  encodeIndices(coding, indices.data(), bytes.data());
  std::vector<int64_t> decoded(coding.k, -1);
  decodeIndices(coding, bytes.data(), decoded.data());
  EXPECT_EQ(decoded, indices);
  return bytes;
}

TEST(IndexCoding, GapsHalveAnExactSelection) {
  // The MLP's first layer at ratio 100: 200704 elements, k = 2007.
  const int64_t count = 784 * 256, k = count / 100;
  IndexCoding coding = smallestIndexCoding(count, k, 4, 0);
  ASSERT_TRUE(coding.gaps);
  EXPECT_EQ(coding.escapes, 3);
  EXPECT_EQ(coding.bytes(), 2 * (k + 6));
  for (int seed = 0; seed < 20; ++seed) {
    std::vector<float> m(count, 0.0f), g = gradient(seed, 0, 0, count);
    roundTrip(coding, runExact(m, g, k));
  }
}

TEST(IndexCoding, EscapesFillTheMessageExactly) {
  // Three gaps of 65535 or more (the most (count - k) / 65535 allows),
  // then k - 3 neighbours: every word of the message is used.
  const int64_t k = 100, count = 3 * 65535 + k;
  IndexCoding coding = smallestIndexCoding(count, k, 4, 0);
  ASSERT_TRUE(coding.gaps);
  ASSERT_EQ(coding.escapes, 3);
  std::vector<int64_t> indices;
  for (int64_t j = 0; j < 3; ++j)
    indices.push_back((j + 1) * 65535 + j);
  while (static_cast<int64_t>(indices.size()) < k)
    indices.push_back(indices.back() + 1);
  ASSERT_EQ(indices.back(), count - 1);
  std::vector<uint8_t> bytes = roundTrip(coding, indices);
  uint16_t first;
  std::memcpy(&first, bytes.data(), 2);
  EXPECT_EQ(first, 0xFFFF);
  // Gap 0 at the very first index, the largest gap (count - k) alone.
  roundTrip(coding, [&] {
    std::vector<int64_t> edge(k);
    std::iota(edge.begin(), edge.end(), int64_t(0));
    edge.back() = count - 1;
    return edge;
  }());
}

TEST(IndexCoding, UnusedWordsAreZero) {
  // Room for one escape that this selection does not use: the last two
  // words are zero whatever the buffer held (roundTrip fills it with 0xAB),
  // so the same selection gives the same bytes.
  const int64_t count = 70000, k = 10;
  IndexCoding coding = smallestIndexCoding(count, k, 4, 0);
  ASSERT_TRUE(coding.gaps);
  ASSERT_EQ(coding.bytes(), 2 * (k + 2));
  std::vector<int64_t> indices(k);
  std::iota(indices.begin(), indices.end(), int64_t(5));
  std::vector<uint8_t> bytes = roundTrip(coding, indices);
  std::vector<uint8_t> expected(coding.bytes(), 0);
  expected[0] = 5; // the first gap; the others are 0 (neighbours)
  EXPECT_EQ(bytes, expected);
}

TEST(IndexCoding, FixedWidthWhereGapsAreNotSmaller) {
  // One index of a large tensor: the escape room outweighs int32.
  IndexCoding one = smallestIndexCoding(1 << 20, 1, 4, 0);
  EXPECT_FALSE(one.gaps);
  EXPECT_EQ(one.bytes(), 4);
  // Chunk selection keeps its per-chunk offsets.
  IndexCoding chunks = smallestIndexCoding(4000, 40, 1, 100);
  EXPECT_FALSE(chunks.gaps);
  EXPECT_EQ(chunks.bytes(), 40);
  std::vector<int64_t> offsets(40);
  for (int64_t j = 0; j < 40; ++j)
    offsets[j] = j * 100 + (j * 37) % 100;
  roundTrip(chunks, offsets);
  // Beyond 2^31 elements an escaped gap would not fit in 32 bits.
  EXPECT_FALSE(smallestIndexCoding(int64_t(1) << 32, 1 << 20, 8, 0).gaps);
  // The CUDA backend's coding is always fixed.
  EXPECT_FALSE(fixedIndexCoding(2007, 4, 0).gaps);
  EXPECT_EQ(fixedIndexCoding(2007, 4, 0).bytes(), 4 * 2007);
}

TEST(Mix, HalfMixingGivesBothSidesTheSameBits) {
  std::vector<float> a = gradient(8, 0, 0, 100), b = gradient(8, 1, 0, 100);
  std::vector<float> a2 = a, b2 = b;
  cpu::mix(a2.data(), b.data(), 100, 0.5f);
  cpu::mix(b2.data(), a.data(), 100, 0.5f);
  EXPECT_EQ(a2, b2);
}

TEST(Schedule, PairingsAreSymmetric) {
  for (gradcomm_schedule schedule :
       {GRADCOMM_SCHEDULE_MATCHING, GRADCOMM_SCHEDULE_RING,
        GRADCOMM_SCHEDULE_HYPERCUBE}) {
    for (int n = 1; n <= 9; ++n) {
      if (scheduleRefusal(schedule, n, /*pairing=*/true) != nullptr)
        continue;
      for (uint64_t step = 0; step < 24; ++step) {
        int sittingOut = 0;
        for (int r = 0; r < n; ++r) {
          int peer = schedulePeer(schedule, 7, step, r, n);
          if (peer < 0) {
            ++sittingOut;
            continue;
          }
          ASSERT_NE(peer, r);
          ASSERT_LT(peer, n);
          EXPECT_EQ(schedulePeer(schedule, 7, step, peer, n), r)
              << "schedule " << schedule << " n " << n << " step " << step;
        }
        // Everybody pairs when n is even; exactly one sits out when odd.
        EXPECT_EQ(sittingOut, n % 2) << "schedule " << schedule << " n " << n;
      }
    }
  }
}

TEST(Schedule, RefusesWhatItCannotServe) {
  // One rule for the runtime and the simulator (gradcomm-plan --simulate).
  for (int n : {1, 2, 4, 8, 1024})
    EXPECT_EQ(scheduleRefusal(GRADCOMM_SCHEDULE_HYPERCUBE, n, true), nullptr);
  for (int n : {0, 3, 6, 12})
    EXPECT_STREQ(scheduleRefusal(GRADCOMM_SCHEDULE_HYPERCUBE, n, true),
                 "the hypercube schedule needs a power-of-two number of ranks");
  EXPECT_EQ(scheduleRefusal(GRADCOMM_SCHEDULE_MATCHING, 7, true), nullptr);
  EXPECT_EQ(scheduleRefusal(GRADCOMM_SCHEDULE_RING, 7, true), nullptr);
  EXPECT_EQ(scheduleRefusal(GRADCOMM_SCHEDULE_RANDOM, 7, false), nullptr);
  EXPECT_NE(scheduleRefusal(GRADCOMM_SCHEDULE_RANDOM, 7, true), nullptr);
  EXPECT_STREQ(scheduleRefusal(static_cast<gradcomm_schedule>(9), 4, false),
               "unknown schedule");
}

TEST(Schedule, HypercubeCyclesDimensions) {
  // n = 4: partners 1, 2, 1, 2, ... for rank 0.
  EXPECT_EQ(schedulePeer(GRADCOMM_SCHEDULE_HYPERCUBE, 0, 0, 0, 4), 1);
  EXPECT_EQ(schedulePeer(GRADCOMM_SCHEDULE_HYPERCUBE, 0, 1, 0, 4), 2);
  EXPECT_EQ(schedulePeer(GRADCOMM_SCHEDULE_HYPERCUBE, 0, 2, 0, 4), 1);
  EXPECT_EQ(schedulePeer(GRADCOMM_SCHEDULE_HYPERCUBE, 0, 1, 3, 4), 1);
}

TEST(Schedule, RingAlternatesNeighbours) {
  // n = 4, step 0: (0,1) (2,3); step 1: (1,2) (3,0).
  EXPECT_EQ(schedulePeer(GRADCOMM_SCHEDULE_RING, 0, 0, 0, 4), 1);
  EXPECT_EQ(schedulePeer(GRADCOMM_SCHEDULE_RING, 0, 0, 2, 4), 3);
  EXPECT_EQ(schedulePeer(GRADCOMM_SCHEDULE_RING, 0, 1, 1, 4), 2);
  EXPECT_EQ(schedulePeer(GRADCOMM_SCHEDULE_RING, 0, 1, 3, 4), 0);
}

TEST(Schedule, MatchingDependsOnSeedAndStepOnly) {
  // Deterministic for (seed, step), and it does change over steps.
  std::set<int> partnersOfZero;
  for (uint64_t step = 0; step < 32; ++step) {
    int peer = schedulePeer(GRADCOMM_SCHEDULE_MATCHING, 11, step, 0, 8);
    EXPECT_EQ(peer, schedulePeer(GRADCOMM_SCHEDULE_MATCHING, 11, step, 0, 8));
    partnersOfZero.insert(peer);
  }
  EXPECT_GT(partnersOfZero.size(), 3u);
}

} // namespace

namespace {

/// The table in docs/gossip.md, as the runtime's public API prints it: who
/// pairs with whom for n = 4 over steps 0..3 (and n = 3, matching).
std::string scheduleTable(gradcomm_schedule schedule, int size) {
  std::string table;
  for (uint64_t step = 0; step < 4; ++step) {
    table += "step " + std::to_string(step) + ":";
    for (int rank = 0; rank < size; ++rank) {
      int peer = -2;
      EXPECT_EQ(gradcomm_gossip_peer(schedule, 0, step, rank, size, &peer),
                GRADCOMM_OK);
      table += " " + std::to_string(rank) + "->" +
               (peer < 0 ? std::string("-") : std::to_string(peer));
    }
    table += "\n";
  }
  return table;
}

TEST(Schedule, DocumentedTables) {
  EXPECT_EQ(scheduleTable(GRADCOMM_SCHEDULE_MATCHING, 4),
            "step 0: 0->2 1->3 2->0 3->1\n"
            "step 1: 0->1 1->0 2->3 3->2\n"
            "step 2: 0->1 1->0 2->3 3->2\n"
            "step 3: 0->3 1->2 2->1 3->0\n");
  EXPECT_EQ(scheduleTable(GRADCOMM_SCHEDULE_RING, 4),
            "step 0: 0->1 1->0 2->3 3->2\n"
            "step 1: 0->3 1->2 2->1 3->0\n"
            "step 2: 0->1 1->0 2->3 3->2\n"
            "step 3: 0->3 1->2 2->1 3->0\n");
  EXPECT_EQ(scheduleTable(GRADCOMM_SCHEDULE_HYPERCUBE, 4),
            "step 0: 0->1 1->0 2->3 3->2\n"
            "step 1: 0->2 1->3 2->0 3->1\n"
            "step 2: 0->1 1->0 2->3 3->2\n"
            "step 3: 0->2 1->3 2->0 3->1\n");
  EXPECT_EQ(scheduleTable(GRADCOMM_SCHEDULE_MATCHING, 3),
            "step 0: 0->1 1->0 2->-\n"
            "step 1: 0->2 1->- 2->0\n"
            "step 2: 0->- 1->2 2->1\n"
            "step 3: 0->2 1->- 2->0\n");
}

} // namespace

namespace {

/// Bit patterns that cover every case of a 16-bit conversion: random ones,
/// and zeros, subnormals, the largest values, infinities, NaNs and exact
/// ties of either type, both signs.
std::vector<float> conversionInputs() {
  std::vector<uint32_t> bits = {
      0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x3f808000u,
      0x3f818000u, 0x3f800800u, 0x3f801800u, 0x477fe000u, 0x477ff000u,
      0x7f7fffffu, 0x7f800000u, 0x7fc00000u, 0x7f800001u, 0x33800000u};
  uint64_t x = 12345;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bits.push_back(static_cast<uint32_t>(x));
  }
  const size_t count = bits.size();
  for (size_t i = 0; i < count; ++i)
    bits.push_back(bits[i] | 0x80000000u);
  std::vector<float> values(bits.size());
  std::memcpy(values.data(), bits.data(), sizeof(float) * bits.size());
  return values;
}

bool sameOrBothNan(float a, float b) {
  return std::isnan(a) ? std::isnan(b) : std::memcmp(&a, &b, 4) == 0;
}

} // namespace

TEST(HalfFloat, BfloatArraysMatchTheScalarConversion) {
  using namespace gradcomm::half;
  std::vector<float> in = conversionInputs(), back(in.size());
  std::vector<uint16_t> out(in.size());
  narrowBfloat16(in.data(), out.data(), static_cast<int64_t>(in.size()));
  widenBfloat16(out.data(), back.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i], toBfloat16(in[i])) << i;
    ASSERT_TRUE(sameOrBothNan(back[i], fromBfloat16(out[i]))) << i;
    ASSERT_EQ(std::isnan(in[i]), std::isnan(back[i])) << i;
  }
  // To nearest, ties to even; overflow to infinity.
  EXPECT_EQ(toBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(toBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(toBfloat16(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(HalfFloat, StreamingSizesMatchTheScalarConversion) {
  // At kStreamingBytes and more the conversions take their streaming-store
  // paths; both output offsets 0 and 1 run the alignment prologue, and a
  // count that is no multiple of 16 the scalar tail.
  using namespace gradcomm::half;
  const int64_t n = kStreamingBytes / 2 + 13;
  std::vector<float> patterns = conversionInputs();
  std::vector<float> in(n + 1);
  for (int64_t i = 0; i <= n; ++i)
    in[i] = patterns[i % patterns.size()];
  std::vector<uint16_t> narrow(n + 1);
  std::vector<float> wide(n + 1);
  for (int64_t offset : {0, 1}) {
    narrowBfloat16(in.data() + offset, narrow.data() + offset, n);
    widenBfloat16(narrow.data() + offset, wide.data() + offset, n);
    for (int64_t i = offset; i < n + offset; ++i) {
      ASSERT_EQ(narrow[i], toBfloat16(in[i])) << i;
      ASSERT_TRUE(sameOrBothNan(wide[i], fromBfloat16(narrow[i]))) << i;
    }
    narrowHalf(in.data() + offset, narrow.data() + offset, n);
    widenHalf(narrow.data() + offset, wide.data() + offset, n);
    for (int64_t i = offset; i < n + offset; ++i) {
      if (!std::isnan(in[i]))
        ASSERT_EQ(narrow[i], toHalf(in[i])) << i;
      ASSERT_TRUE(sameOrBothNan(wide[i], fromHalf(narrow[i]))) << i;
    }
  }
}

TEST(HalfFloat, HalfArraysMatchTheScalarConversion) {
  using namespace gradcomm::half;
  std::vector<float> in = conversionInputs(), back(in.size());
  std::vector<uint16_t> out(in.size());
  narrowHalf(in.data(), out.data(), static_cast<int64_t>(in.size()));
  widenHalf(out.data(), back.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) { // payloads may differ; NaN stays NaN
      ASSERT_TRUE(std::isnan(fromHalf(out[i]))) << i;
      continue;
    }
    ASSERT_EQ(out[i], toHalf(in[i])) << i;
    ASSERT_TRUE(sameOrBothNan(back[i], fromHalf(out[i]))) << i;
  }
  EXPECT_EQ(toHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(toHalf(65520.0f), 0x7c00); // rounds past 65504: infinity
}
