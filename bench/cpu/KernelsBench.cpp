//===- KernelsBench.cpp - CPU kernel bandwidth against memcpy -------------===//
//
// Part of the GradComm project.
//
// docs/design/benchmarks.md, CPU kernels: every figure is a ratio against a
// copy measured in the same run. Each benchmark reports `bytes_per_second`
// counting the bytes the kernel must move (reads + writes); bench/cpu/run.sh
// turns them into ratios. Not a test.
//
//===----------------------------------------------------------------------===//

#include "HalfFloat.h"
#include "Kernels.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace gradcomm::cpu;

namespace {

constexpr float kBeta = 0.5f;
constexpr int64_t kRatio = 100;

std::vector<float> randomVector(int64_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<float>(static_cast<int64_t>(x >> 40) - (1 << 23)) /
           static_cast<float>(1 << 23);
  }
  return v;
}

void setBytes(benchmark::State &state, double bytesPerElement) {
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytesPerElement * static_cast<double>(state.range(0)) *
                             static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

/// Calibration: memcpy moves 4 B read + 4 B written per element.
void BM_Copy(benchmark::State &state) {
  const int64_t n = state.range(0);
  std::vector<float> src = randomVector(n, 1), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), sizeof(float) * n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, 8);
}

/// The floor of every selection: one read of m and g (the non-finite scan
/// of m + g, a max-reduction). 8 B per element.
void BM_ScanSum(benchmark::State &state) {
  const int64_t n = state.range(0);
  std::vector<float> m = randomVector(n, 12), g = randomVector(n, 13);
  for (auto _ : state)
    benchmark::DoNotOptimize(maxMagnitudeKeySum(m.data(), g.data(), n));
  setBytes(state, 8);
}

/// Leader, chunk selection: select + gather + low-pass update + zero the
/// output in one pass. Reads m, g; writes m, out: 16 B per element.
void BM_FusedChunk(benchmark::State &state) {
  const int64_t n = state.range(0), k = (n + kRatio - 1) / kRatio;
  std::vector<float> m = randomVector(n, 2), g = randomVector(n, 3), out(n);
  std::vector<float> values(k);
  std::vector<int64_t> indices(k);
  for (auto _ : state) {
    selectChunkAndUpdate(m.data(), g.data(), n, kRatio, kBeta, indices.data(),
                         values.data(), out.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, 16);
}

/// Non-leader: gather + low-pass update + zero the output, indices known.
/// 16 B per element.
void BM_FusedUpdate(benchmark::State &state) {
  const int64_t n = state.range(0), k = (n + kRatio - 1) / kRatio;
  std::vector<float> m = randomVector(n, 4), g = randomVector(n, 5), out(n);
  std::vector<float> values(k);
  std::vector<int64_t> indices(k);
  for (int64_t j = 0; j < k; ++j)
    indices[j] = j * kRatio;
  for (auto _ : state) {
    gatherAndUpdate(m.data(), g.data(), n, indices.data(), k, kBeta,
                    values.data(), out.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, 16);
}

/// Times selectExact (top N/100 of |m + g|) in its steady state, as in the
/// runtime: the scratch is warm (allocated and touched) after a first call.
/// Reported against the 4 B per element of one input read.
void timeExactSelect(benchmark::State &state, const std::vector<float> &m,
                     const std::vector<float> &g) {
  const int64_t n = state.range(0), k = (n + kRatio - 1) / kRatio;
  std::vector<int64_t> indices(k);
  SelectScratch scratch;
  selectExact(m.data(), g.data(), n, k, indices.data(), scratch);
  for (auto _ : state) {
    selectExact(m.data(), g.data(), n, k, indices.data(), scratch);
    benchmark::DoNotOptimize(indices.data());
  }
  setBytes(state, 4);
}

/// Times the baseline selection, std::nth_element on |m + g| materialized
/// (the materialization is not timed).
void timeNthElement(benchmark::State &state, const std::vector<float> &m,
                    const std::vector<float> &g) {
  const int64_t n = state.range(0), k = (n + kRatio - 1) / kRatio;
  std::vector<float> keys(n);
  for (auto _ : state) {
    state.PauseTiming();
    for (int64_t i = 0; i < n; ++i)
      keys[i] = std::fabs(m[i] + g[i]);
    state.ResumeTiming();
    std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(),
                     std::greater<float>());
    benchmark::DoNotOptimize(keys.data());
  }
  setBytes(state, 4);
}

/// Times what a plain program does to produce selectExact's output with
/// std::nth_element, end to end: the keys |m + g| materialized, the k-th
/// largest found, then the k indices collected in ascending order (every
/// key above the k-th, and of those equal to it the lowest indices, the
/// runtime's tie rule). The fair reference for a caller who would
/// otherwise write this; the keys-given figure above is the generous one.
void timeNthElementEndToEnd(benchmark::State &state,
                            const std::vector<float> &m,
                            const std::vector<float> &g) {
  const int64_t n = state.range(0), k = (n + kRatio - 1) / kRatio;
  std::vector<float> keys(n), partitioned(n);
  std::vector<int64_t> indices(k);
  auto select = [&] {
    for (int64_t i = 0; i < n; ++i)
      keys[i] = std::fabs(m[i] + g[i]);
    partitioned = keys;
    std::nth_element(partitioned.begin(), partitioned.begin() + (k - 1),
                     partitioned.end(), std::greater<float>());
    const float cutoff = partitioned[k - 1];
    int64_t above = 0;
    for (int64_t j = 0; j < k - 1; ++j)
      above += partitioned[j] > cutoff;
    int64_t tiesLeft = k - above, out = 0;
    for (int64_t i = 0; i < n && out < k; ++i) {
      const bool tie = keys[i] == cutoff && tiesLeft > 0;
      tiesLeft -= tie;
      if (keys[i] > cutoff || tie)
        indices[out++] = i;
    }
  };
  // A reference that selected something else would time nothing useful.
  select();
  std::vector<int64_t> expected(k);
  SelectScratch scratch;
  selectExact(m.data(), g.data(), n, k, expected.data(), scratch);
  if (indices != expected) {
    state.SkipWithError("the end-to-end reference differs from selectExact");
    return;
  }
  for (auto _ : state) {
    select();
    benchmark::DoNotOptimize(indices.data());
  }
  setBytes(state, 4);
}

/// Leader, exact selection alone: two read passes over m and g.
void BM_ExactSelect(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeExactSelect(state, randomVector(n, 6), randomVector(n, 7));
}

/// Leader, exact path end to end: selection + fused update.
void BM_FusedExact(benchmark::State &state) {
  const int64_t n = state.range(0), k = (n + kRatio - 1) / kRatio;
  std::vector<float> m = randomVector(n, 8), g = randomVector(n, 9), out(n);
  std::vector<float> values(k);
  std::vector<int64_t> indices(k);
  SelectScratch scratch;
  selectExact(m.data(), g.data(), n, k, indices.data(), scratch);
  for (auto _ : state) {
    selectExact(m.data(), g.data(), n, k, indices.data(), scratch);
    gatherAndUpdate(m.data(), g.data(), n, indices.data(), k, kBeta,
                    values.data(), out.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, 16);
}

/// The baseline selection on the same inputs as BM_ExactSelect.
void BM_NthElement(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeNthElement(state, randomVector(n, 6), randomVector(n, 7));
}

/// std::nth_element end to end on the same inputs.
void BM_NthElementEndToEnd(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeNthElementEndToEnd(state, randomVector(n, 6), randomVector(n, 7));
}

/// A sparse gradient: one non-zero per 1000 elements, fewer than k = n /
/// kRatio (an embedding's gradient, a ReLU layer's dead units); m = 0.
std::vector<float> sparseVector(int64_t n, uint64_t seed) {
  std::vector<float> values = randomVector(n / 1000 + 1, seed), v(n, 0.0f);
  for (int64_t j = 0; j * 1000 < n; ++j)
    v[j * 1000] = values[j];
  return v;
}

/// selectExact on the sparse gradient.
void BM_ExactSelectSparse(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeExactSelect(state, std::vector<float>(n, 0.0f), sparseVector(n, 10));
}

/// std::nth_element on the same sparse |m + g|.
void BM_NthElementSparse(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeNthElement(state, std::vector<float>(n, 0.0f), sparseVector(n, 10));
}

/// std::nth_element end to end on the same sparse gradient.
void BM_NthElementEndToEndSparse(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeNthElementEndToEnd(state, std::vector<float>(n, 0.0f),
                         sparseVector(n, 10));
}

/// Layers of different scales, as a model's gradient is: eight equal
/// slices scaled by 1e-4 ... 1e3, so the top k (1 %) all lie in the last
/// layer and a sample mostly sees the small ones. m = 0.
std::vector<float> layeredVector(int64_t n, uint64_t seed) {
  std::vector<float> v = randomVector(n, seed);
  const int64_t layers = 8, size = (n + layers - 1) / layers;
  for (int64_t i = 0; i < n; ++i)
    v[i] *= std::pow(10.0f, static_cast<float>(i / size) - 4.0f);
  return v;
}

/// selectExact on the layered gradient.
void BM_ExactSelectLayered(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeExactSelect(state, std::vector<float>(n, 0.0f), layeredVector(n, 11));
}

/// std::nth_element on the same layered |m + g|.
void BM_NthElementLayered(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeNthElement(state, std::vector<float>(n, 0.0f), layeredVector(n, 11));
}

/// std::nth_element end to end on the same layered gradient.
void BM_NthElementEndToEndLayered(benchmark::State &state) {
  const int64_t n = state.range(0);
  timeNthElementEndToEnd(state, std::vector<float>(n, 0.0f),
                         layeredVector(n, 11));
}

/// Sizes from GRADCOMM_BENCH_SIZES (comma-separated element counts; set by
/// bench/cpu/run.sh from this machine's cache sizes), else 1M, 16M, 256M.
/// The 16-bit wire's conversions (runtime/src/kernels/HalfFloat.h): read 4 B
/// and write 2 B per element (narrow), or read 2 and write 4 (widen).
template <void (*Narrow)(const float *, uint16_t *, int64_t)>
void narrowBench(benchmark::State &state) {
  const int64_t n = state.range(0);
  std::vector<float> in = randomVector(n, 7);
  std::vector<uint16_t> out(n);
  for (auto _ : state) {
    Narrow(in.data(), out.data(), n);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, 6.0);
}

template <void (*Narrow)(const float *, uint16_t *, int64_t),
          void (*Widen)(const uint16_t *, float *, int64_t)>
void widenBench(benchmark::State &state) {
  const int64_t n = state.range(0);
  std::vector<float> in = randomVector(n, 8), out(n);
  std::vector<uint16_t> packed(n);
  Narrow(in.data(), packed.data(), n);
  for (auto _ : state) {
    Widen(packed.data(), out.data(), n);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, 6.0);
}

void BM_NarrowBfloat16(benchmark::State &state) {
  narrowBench<gradcomm::half::narrowBfloat16>(state);
}
void BM_WidenBfloat16(benchmark::State &state) {
  widenBench<gradcomm::half::narrowBfloat16, gradcomm::half::widenBfloat16>(
      state);
}
void BM_NarrowHalf(benchmark::State &state) {
  narrowBench<gradcomm::half::narrowHalf>(state);
}
void BM_WidenHalf(benchmark::State &state) {
  widenBench<gradcomm::half::narrowHalf, gradcomm::half::widenHalf>(state);
}

void sizes(benchmark::internal::Benchmark *b) {
  std::vector<int64_t> counts;
  if (const char *list = std::getenv("GRADCOMM_BENCH_SIZES")) {
    std::stringstream stream(list);
    std::string item;
    while (std::getline(stream, item, ','))
      if (!item.empty())
        counts.push_back(std::stoll(item));
  }
  if (counts.empty())
    counts = {int64_t(1) << 20, int64_t(1) << 24, int64_t(1) << 28};
  for (int64_t n : counts)
    b->Arg(n);
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

} // namespace

BENCHMARK(BM_Copy)->Apply(sizes);
BENCHMARK(BM_ScanSum)->Apply(sizes);
BENCHMARK(BM_FusedChunk)->Apply(sizes);
BENCHMARK(BM_FusedUpdate)->Apply(sizes);
BENCHMARK(BM_ExactSelect)->Apply(sizes);
BENCHMARK(BM_FusedExact)->Apply(sizes);
BENCHMARK(BM_NthElement)->Apply(sizes);
BENCHMARK(BM_NthElementEndToEnd)->Apply(sizes);
BENCHMARK(BM_ExactSelectSparse)->Apply(sizes);
BENCHMARK(BM_NthElementSparse)->Apply(sizes);
BENCHMARK(BM_NthElementEndToEndSparse)->Apply(sizes);
BENCHMARK(BM_ExactSelectLayered)->Apply(sizes);
BENCHMARK(BM_NthElementLayered)->Apply(sizes);
BENCHMARK(BM_NthElementEndToEndLayered)->Apply(sizes);

BENCHMARK(BM_NarrowBfloat16)->Apply(sizes);
BENCHMARK(BM_WidenBfloat16)->Apply(sizes);
BENCHMARK(BM_NarrowHalf)->Apply(sizes);
BENCHMARK(BM_WidenHalf)->Apply(sizes);

BENCHMARK_MAIN();
