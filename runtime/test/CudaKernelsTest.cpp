//===- CudaKernelsTest.cpp - CUDA kernels against the CPU kernels ---------===//
//
// Part of the GradComm project.
//
// Same inputs on both backends, same indices and bits expected. Needs a GPU:
// on a machine without an NVIDIA GPU the program exits 77, which ctest
// reports as skipped; with one that CUDA cannot use it fails (CudaTestUtil.h).
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"
#include "CudaTestUtil.h"
#include "HalfFloat.h"
#include "Kernels.h"

#include "MiniTest.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

/// GRADCOMM_GPU_TESTS_QUICK=1 (bench/gpu/run.sh under compute-sanitizer,
/// which slows kernels 10-100x): the largest inputs shrink; every path is
/// still taken.
int64_t sized(int64_t full, int64_t quick) {
  const char *text = std::getenv("GRADCOMM_GPU_TESTS_QUICK");
  return text && *text && *text != '0' ? quick : full;
}

std::vector<float> data(int64_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = float(int64_t(x >> 40) - (1 << 23)) / float(1 << 23);
  }
  return v;
}

/// A device copy of a host vector, freed at scope exit.
template <typename T> struct Device {
  T *ptr = nullptr;
  size_t count = 0;
  explicit Device(size_t n) : count(n) {
    EXPECT_EQ(cudaMalloc(&ptr, sizeof(T) * std::max<size_t>(n, 1)),
              cudaSuccess);
  }
  explicit Device(const std::vector<T> &host) : Device(host.size()) {
    EXPECT_EQ(
        cudaMemcpy(ptr, host.data(), sizeof(T) * count, cudaMemcpyHostToDevice),
        cudaSuccess);
  }
  ~Device() { cudaFree(ptr); }
  std::vector<T> host() const {
    std::vector<T> out(count);
    EXPECT_EQ(
        cudaMemcpy(out.data(), ptr, sizeof(T) * count, cudaMemcpyDeviceToHost),
        cudaSuccess);
    return out;
  }
};

/// Bits of each value, every NaN as 0x7fffffff: CUDA's arithmetic returns
/// that canonical NaN where x86 keeps the payload of a NaN operand, the one
/// difference between the backends (docs/runtime.md). Everything else is
/// compared bit for bit.
std::vector<uint32_t> bits(const std::vector<float> &values) {
  std::vector<uint32_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    std::memcpy(&out[i], &values[i], sizeof(float));
    if (values[i] != values[i])
      out[i] = 0x7fffffffu;
  }
  return out;
}

/// A tie-heavy gradient: m = 0 and g from five magnitudes of both signs,
/// so thousands of keys are equal and the k-th key is rarely unique.
std::vector<float> fewValues(int64_t n, uint64_t seed) {
  const float levels[] = {0.0f, 0.25f, 0.5f, 1.0f, 2.0f};
  std::vector<float> g = data(n, seed);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t r;
    std::memcpy(&r, &g[i], sizeof(r));
    r = (r * 2654435761u) >> 7;
    g[i] = (r & 1 ? -1.0f : 1.0f) * levels[(r >> 1) % 5];
  }
  return g;
}

/// The exact selection on the GPU against the CPU for each k.
void expectSelectionMatches(const std::vector<float> &m,
                            const std::vector<float> &g,
                            const std::vector<int64_t> &ks, const char *what) {
  const int64_t n = static_cast<int64_t>(m.size());
  Device<float> dm(m), dg(g);
  gradcomm::cuda::SelectScratch scratch;
  gradcomm::cpu::SelectScratch cpuScratch;
  for (int64_t k : ks) {
    std::vector<int64_t> expected(k);
    gradcomm::cpu::selectExact(m.data(), g.data(), n, k, expected.data(),
                               cpuScratch);
    Device<int64_t> indices(static_cast<size_t>(k));
    ASSERT_EQ(gradcomm::cuda::selectExact(dm.ptr, dg.ptr, n, k, indices.ptr,
                                          scratch, nullptr),
              cudaSuccess);
    EXPECT_EQ(indices.host(), expected) << what << ": n " << n << " k " << k;
  }
}

/// Sizes: one tile; several tiles with a ragged last warp span; over 1024
/// tiles of 16384, so the one-block tile scan carries its totals across
/// rounds.
TEST(CudaKernels, ExactSelectionMatchesCpu) {
  for (int64_t n : {int64_t(1000), int64_t(65536) * 3 + 5,
                    sized((int64_t(1) << 25) + 3, 65536)}) {
    std::vector<float> m = data(n, 1), g = data(n, 2);
    // Ties: a run of equal magnitudes of both signs (m = 0 there, so
    // |m + g| really is equal).
    for (int64_t i = 100; i < 400; ++i) {
      m[i] = 0.0f;
      g[i] = i % 2 ? 0.75f : -0.75f;
    }
    for (int64_t k : {int64_t(1), n / 100 + 1, n / 3}) {
      std::vector<int64_t> expected(k);
      gradcomm::cpu::SelectScratch cpuScratch;
      gradcomm::cpu::selectExact(m.data(), g.data(), n, k, expected.data(),
                                 cpuScratch);
      Device<float> dm(m), dg(g);
      Device<int64_t> indices(static_cast<size_t>(k));
      gradcomm::cuda::SelectScratch scratch;
      ASSERT_EQ(gradcomm::cuda::selectExact(dm.ptr, dg.ptr, n, k, indices.ptr,
                                            scratch, nullptr),
                cudaSuccess);
      EXPECT_EQ(indices.host(), expected) << "n " << n << " k " << k;
    }
  }
}

TEST(CudaKernels, ChunkSelectionAndFusedUpdateMatchCpu) {
  const int64_t n = sized(1000003, 100003);
  // 256 is the largest chunk the warp-per-chunk kernel takes; 257 and
  // 4096 go to the block-per-chunk kernel.
  for (int64_t chunk : {1, 16, 33, 100, 256, 257, 4096}) {
    const int64_t k = (n + chunk - 1) / chunk;
    std::vector<float> m = data(n, 3), g = data(n, 4);
    std::vector<float> cpuM = m, cpuValues(k), cpuOut(n, 9.0f);
    std::vector<int64_t> cpuIndices(k);
    gradcomm::cpu::selectChunkAndUpdate(cpuM.data(), g.data(), n, chunk, 0.3f,
                                        cpuIndices.data(), cpuValues.data(),
                                        cpuOut.data());
    Device<float> dm(m), dg(g), values(static_cast<size_t>(k)),
        out(std::vector<float>(n, 9.0f));
    Device<int64_t> indices(static_cast<size_t>(k));
    ASSERT_EQ(gradcomm::cuda::selectChunk(dm.ptr, dg.ptr, n, chunk, indices.ptr,
                                          0.3f, values.ptr, out.ptr, true,
                                          nullptr),
              cudaSuccess);
    EXPECT_EQ(indices.host(), cpuIndices) << "chunk " << chunk;
    EXPECT_EQ(values.host(), cpuValues);
    EXPECT_EQ(dm.host(), cpuM);
    EXPECT_EQ(out.host(), cpuOut);
  }
}

TEST(CudaKernels, GatherUpdateScatterMixMatchCpu) {
  const int64_t n = sized(1 << 20, 1 << 16), k = 5000;
  std::vector<float> m = data(n, 5), g = data(n, 6);
  std::vector<int64_t> idx(k);
  for (int64_t j = 0; j < k; ++j)
    idx[j] = j * (n / k) + (j % 7);
  std::vector<float> cpuM = m, cpuValues(k), cpuOut(n, 1.0f);
  gradcomm::cpu::gatherAndUpdate(cpuM.data(), g.data(), n, idx.data(), k, 0.5f,
                                 cpuValues.data(), cpuOut.data());
  Device<float> dm(m), dg(g), values(static_cast<size_t>(k)),
      out(std::vector<float>(n, 1.0f));
  Device<int64_t> indices(idx);
  Device<uint32_t> marks(std::vector<uint32_t>(n, 0));
  for (uint32_t stamp : {1u}) {
    ASSERT_EQ(gradcomm::cuda::gatherAndUpdate(dm.ptr, dg.ptr, n, indices.ptr, k,
                                              0.5f, values.ptr, out.ptr,
                                              marks.ptr, stamp, nullptr),
              cudaSuccess);
  }
  EXPECT_EQ(dm.host(), cpuM);
  EXPECT_EQ(values.host(), cpuValues);
  EXPECT_EQ(out.host(), cpuOut);

  gradcomm::cpu::scatter(cpuOut.data(), idx.data(), cpuValues.data(), k);
  ASSERT_EQ(gradcomm::cuda::scatter(out.ptr, indices.ptr, values.ptr, k, 1.0f,
                                    nullptr),
            cudaSuccess);
  EXPECT_EQ(out.host(), cpuOut);

  std::vector<float> x = data(n, 7), peer = data(n, 8), cpuX = x;
  gradcomm::cpu::mix(cpuX.data(), peer.data(), n, 0.3f);
  Device<float> dx(x), dpeer(peer);
  ASSERT_EQ(gradcomm::cuda::mix(dx.ptr, dpeer.ptr, n, 0.3f, nullptr),
            cudaSuccess);
  EXPECT_EQ(dx.host(), cpuX);
}

/// The update kernel takes 16-byte accesses only when every buffer is
/// 16-byte aligned, and leaves the last n % 4 elements to the scalar form:
/// the same bits at every offset and length.
TEST(CudaKernels, FusedUpdateMatchesCpuAtEveryAlignment) {
  const int64_t total = 100003, k = 321;
  std::vector<float> m = data(total, 14), g = data(total, 15);
  for (int64_t offset : {0, 1, 2, 3}) {
    const int64_t n = total - offset;
    std::vector<int64_t> idx(k);
    for (int64_t j = 0; j < k; ++j)
      idx[j] = j * (n / k) + (j % 5);
    std::vector<float> cpuM = m, cpuValues(k), cpuOut(total, 1.0f);
    gradcomm::cpu::gatherAndUpdate(cpuM.data() + offset, g.data() + offset, n,
                                   idx.data(), k, 0.25f, cpuValues.data(),
                                   cpuOut.data() + offset);
    Device<float> dm(m), dg(g), values(static_cast<size_t>(k)),
        out(std::vector<float>(total, 1.0f));
    Device<int64_t> indices(idx);
    Device<uint32_t> marks(std::vector<uint32_t>(total, 0));
    ASSERT_EQ(gradcomm::cuda::gatherAndUpdate(
                  dm.ptr + offset, dg.ptr + offset, n, indices.ptr, k, 0.25f,
                  values.ptr, out.ptr + offset, marks.ptr + offset, 1, nullptr),
              cudaSuccess);
    EXPECT_EQ(bits(dm.host()), bits(cpuM)) << "offset " << offset;
    EXPECT_EQ(bits(values.host()), bits(cpuValues)) << "offset " << offset;
    EXPECT_EQ(bits(out.host()), bits(cpuOut)) << "offset " << offset;
  }
}

/// Several workers simulated on one GPU: the leader's selection, the shared
/// indices, every worker's gather + low-pass update, as the backend chains
/// them, against the same chain of CPU kernels. Values are summed on the
/// host in worker order on both sides.
TEST(CudaKernels, SimulatedWorkersMatchCpu) {
  const int workers = 3;
  const int64_t n = 50000, chunkSize = 100;
  for (bool chunk : {false, true}) {
    const int64_t k = chunk ? (n + chunkSize - 1) / chunkSize : 500;
    std::vector<std::vector<float>> cpuMemory(workers,
                                              std::vector<float>(n, 0.0f));
    std::vector<Device<float> *> gpuMemory;
    for (int w = 0; w < workers; ++w)
      gpuMemory.push_back(new Device<float>(std::vector<float>(n, 0.0f)));
    Device<uint32_t> marks(std::vector<uint32_t>(n, 0));
    gradcomm::cuda::SelectScratch scratch;
    gradcomm::cpu::SelectScratch cpuScratch;
    uint32_t stamp = 0;
    for (int step = 0; step < 6; ++step) {
      const int leader = step % workers;
      std::vector<std::vector<float>> grads;
      for (int w = 0; w < workers; ++w)
        grads.push_back(data(n, 100 + step * workers + w));
      // CPU chain.
      std::vector<int64_t> cpuIndices(k);
      if (chunk)
        gradcomm::cpu::selectChunk(cpuMemory[leader].data(),
                                   grads[leader].data(), n, chunkSize,
                                   cpuIndices.data());
      else
        gradcomm::cpu::selectExact(cpuMemory[leader].data(),
                                   grads[leader].data(), n, k,
                                   cpuIndices.data(), cpuScratch);
      std::vector<float> cpuSum(k, 0.0f);
      for (int w = 0; w < workers; ++w) {
        std::vector<float> values(k);
        gradcomm::cpu::gatherAndUpdate(cpuMemory[w].data(), grads[w].data(), n,
                                       cpuIndices.data(), k, 0.5f,
                                       values.data(), nullptr);
        for (int64_t j = 0; j < k; ++j)
          cpuSum[j] += values[j];
      }
      // GPU chain: the leader selects, every worker uses its indices.
      Device<int64_t> indices(static_cast<size_t>(k));
      Device<float> leaderGrad(grads[leader]);
      if (chunk) {
        ASSERT_EQ(gradcomm::cuda::selectChunk(
                      gpuMemory[leader]->ptr, leaderGrad.ptr, n, chunkSize,
                      indices.ptr, 0.5f, nullptr, nullptr, false, nullptr),
                  cudaSuccess);
      } else {
        ASSERT_EQ(gradcomm::cuda::selectExact(gpuMemory[leader]->ptr,
                                              leaderGrad.ptr, n, k, indices.ptr,
                                              scratch, nullptr),
                  cudaSuccess);
      }
      EXPECT_EQ(indices.host(), cpuIndices) << "step " << step;
      std::vector<float> gpuSum(k, 0.0f);
      for (int w = 0; w < workers; ++w) {
        Device<float> grad(grads[w]), values(static_cast<size_t>(k));
        ASSERT_EQ(gradcomm::cuda::gatherAndUpdate(
                      gpuMemory[w]->ptr, grad.ptr, n, indices.ptr, k, 0.5f,
                      values.ptr, nullptr, marks.ptr, ++stamp, nullptr),
                  cudaSuccess);
        std::vector<float> host = values.host();
        for (int64_t j = 0; j < k; ++j)
          gpuSum[j] += host[j];
      }
      EXPECT_EQ(gpuSum, cpuSum) << "step " << step;
      for (int w = 0; w < workers; ++w)
        EXPECT_EQ(gpuMemory[w]->host(), cpuMemory[w])
            << "worker " << w << " step " << step;
    }
    for (Device<float> *memory : gpuMemory)
      delete memory;
  }
}

/// The k-th key tied with thousands of others (the partial-equal path of
/// the compaction), k exactly at the edge of a group of equal keys and one
/// either side (a radix bucket's edge: here every group is one bucket),
/// k = n, and m = 0 everywhere.
TEST(CudaKernels, TieHeavySelectionMatchesCpu) {
  for (int64_t n : {int64_t(5000), int64_t(65536) * 3 + 5}) {
    std::vector<float> m(n, 0.0f), g = fewValues(n, 11);
    int64_t top = 0, second = 0; // keys of magnitude 2, and 1 or more
    for (float x : g) {
      top += std::fabs(x) == 2.0f;
      second += std::fabs(x) >= 1.0f;
    }
    expectSelectionMatches(m, g,
                           {1, top - 1, top, top + 1, second - 1, second,
                            second + 1, n / 2, n - 1, n},
                           "tie-heavy");
  }
}

/// A sparse gradient with fewer non-zeros than k: the k-th key is 0, and
/// the first zeros complete the top k (the compaction's equal-key path at
/// scale).
TEST(CudaKernels, SparseGradientSelectionMatchesCpu) {
  const int64_t n = sized(int64_t(1) << 22, 65536 * 3 + 5);
  std::vector<float> m(n, 0.0f), g(n, 0.0f), dense = data(n, 16);
  for (int64_t i = 0; i < n; i += 1000)
    g[i] = dense[i];
  expectSelectionMatches(m, g, {1, n / 1000, n / 1000 + 1, n / 100, n / 2},
                         "sparse");
}

/// NaN and Inf select first (their keys are the largest, NaN above Inf) on
/// both backends; the memory update carries them the same way.
TEST(CudaKernels, NonFiniteValuesSelectAndUpdateAlike) {
  const int64_t n = 20000;
  std::vector<float> m = data(n, 12), g = data(n, 13);
  const float inf = std::numeric_limits<float>::infinity();
  // Two NaNs from the same input payload: equal keys on each backend
  // whatever payload its arithmetic gives m + g, so ties go to the lower
  // index on both.
  g[7] = std::numeric_limits<float>::quiet_NaN();
  g[9000] = std::numeric_limits<float>::quiet_NaN();
  g[300] = inf;
  g[301] = -inf;
  expectSelectionMatches(m, g, {1, 3, 4, 100}, "non-finite");

  const int64_t k = 100;
  std::vector<int64_t> idx(k);
  gradcomm::cpu::SelectScratch cpuScratch;
  gradcomm::cpu::selectExact(m.data(), g.data(), n, k, idx.data(), cpuScratch);
  std::vector<float> cpuM = m, cpuValues(k), cpuOut(n, 1.0f);
  gradcomm::cpu::gatherAndUpdate(cpuM.data(), g.data(), n, idx.data(), k, 0.5f,
                                 cpuValues.data(), cpuOut.data());
  Device<float> dm(m), dg(g), values(static_cast<size_t>(k)),
      out(std::vector<float>(n, 1.0f));
  Device<int64_t> indices(idx);
  Device<uint32_t> marks(std::vector<uint32_t>(n, 0));
  ASSERT_EQ(gradcomm::cuda::gatherAndUpdate(dm.ptr, dg.ptr, n, indices.ptr, k,
                                            0.5f, values.ptr, out.ptr,
                                            marks.ptr, 1, nullptr),
            cudaSuccess);
  EXPECT_EQ(bits(values.host()), bits(cpuValues));
  EXPECT_EQ(bits(dm.host()), bits(cpuM));
  EXPECT_EQ(bits(out.host()), bits(cpuOut));
}

/// The average's divisions (n = 3, 7 ranks): the scatter's and the dense
/// all-reduce's, against the same IEEE division on the host.
TEST(CudaKernels, DivisorsOtherThanOneMatchHostDivision) {
  const int64_t n = 100000, k = 777;
  std::vector<float> values = data(k, 14), x = data(n, 15);
  std::vector<int64_t> idx(k);
  for (int64_t j = 0; j < k; ++j)
    idx[j] = j * (n / k);
  for (float divisor : {3.0f, 7.0f}) {
    std::vector<float> expectedOut(n, 0.0f), expectedX = x;
    for (int64_t j = 0; j < k; ++j)
      expectedOut[idx[j]] = values[j] / divisor;
    for (float &v : expectedX)
      v = v / divisor;
    Device<float> out(std::vector<float>(n, 0.0f)), dvalues(values), dx(x);
    Device<int64_t> indices(idx);
    ASSERT_EQ(gradcomm::cuda::scatter(out.ptr, indices.ptr, dvalues.ptr, k,
                                      divisor, nullptr),
              cudaSuccess);
    ASSERT_EQ(gradcomm::cuda::divide(dx.ptr, n, divisor, nullptr), cudaSuccess);
    EXPECT_EQ(out.host(), expectedOut) << "divisor " << divisor;
    EXPECT_EQ(dx.host(), expectedX) << "divisor " << divisor;
  }
}

/// The local top-k's union: three ranks' overlapping blocks of indices,
/// each distinct index counted and divided once; an index whose mark holds
/// an older stamp (an earlier call's) still counts.
TEST(CudaKernels, UnionIsCountedAndDividedOnce) {
  const int64_t n = 50000, k = 1000;
  std::vector<int64_t> gathered;
  for (int64_t rank = 0; rank < 3; ++rank)
    for (int64_t j = 0; j < k; ++j)
      gathered.push_back((j * (rank + 2) * 7) % n);
  const std::set<int64_t> distinct(gathered.begin(), gathered.end());
  ASSERT_TRUE(distinct.size() < gathered.size());
  const std::vector<float> x = data(n, 21);
  std::vector<float> divided = x;
  for (int64_t i : distinct)
    divided[i] = x[i] / 3.0f;
  std::vector<uint32_t> oldMarks(n, 0);
  oldMarks[gathered[5]] = 6;
  for (bool divide : {true, false}) {
    Device<float> out(x);
    Device<int64_t> indices(gathered);
    Device<uint32_t> marks(oldMarks);
    Device<unsigned long long> count(std::vector<unsigned long long>{12345});
    ASSERT_EQ(gradcomm::cuda::divideUnion(
                  out.ptr, indices.ptr, static_cast<int64_t>(gathered.size()),
                  divide, 3.0f, marks.ptr, 7, count.ptr, nullptr),
              cudaSuccess);
    EXPECT_EQ(count.host()[0], distinct.size()) << "divide " << divide;
    EXPECT_EQ(bits(out.host()), bits(divide ? divided : x))
        << "divide " << divide;
  }
}

/// The index broadcast's wire form: each index's offset inside its chunk
/// (or the index itself) as 1, 2 or 4 little-endian bytes, and back.
TEST(CudaKernels, IndicesNarrowAndWidenOnTheWire) {
  struct Case {
    int width;
    int64_t chunkSize;
  };
  for (Case c : {Case{1, 200}, Case{2, 60000}, Case{4, 0}, Case{4, 100000}}) {
    const int64_t k = 3000;
    std::vector<int64_t> indices(k);
    for (int64_t j = 0; j < k; ++j)
      indices[j] = c.chunkSize ? j * c.chunkSize + (j * 7919) % c.chunkSize
                               : j * 715827 + 3;
    std::vector<uint8_t> expected(k * c.width);
    for (int64_t j = 0; j < k; ++j) {
      const uint64_t offset = uint64_t(indices[j] - j * c.chunkSize);
      for (int b = 0; b < c.width; ++b)
        expected[j * c.width + b] = uint8_t(offset >> (8 * b));
    }
    Device<int64_t> device(indices), back(static_cast<size_t>(k));
    Device<uint8_t> wire(static_cast<size_t>(k * c.width));
    ASSERT_EQ(gradcomm::cuda::narrowIndices(device.ptr, k, c.width, c.chunkSize,
                                            wire.ptr, nullptr),
              cudaSuccess);
    ASSERT_EQ(gradcomm::cuda::widenIndices(wire.ptr, k, c.width, c.chunkSize,
                                           back.ptr, nullptr),
              cudaSuccess);
    EXPECT_EQ(wire.host(), expected) << "width " << c.width;
    EXPECT_EQ(back.host(), indices) << "width " << c.width;
  }
}

TEST(CudaKernels, ValuesNarrowAndWidenOnTheWireAsOnTheHost) {
  // Every rounding case of both types: values of all magnitudes, ties,
  // binary16's subnormals and overflow, infinities, NaNs with payloads.
  std::vector<float> values = data(100000, 21);
  for (int64_t i = 0; i < 100000; i += 7)
    values[i] *= std::ldexp(1.0f, int(i % 61) - 30);
  const uint32_t special[] = {
      0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
      0x7f800001u, 0xffa12345u, 0x3f808000u, 0x3f818000u, 0x477fe000u,
      0x477ff000u, 0x33800000u, 0x33000001u, 0x00000001u, 0x7f7fffffu};
  // At the front: the host's vector path (F16C) converts them, as it does
  // in the runtime for any tensor of 8 values or more.
  for (size_t i = 0; i < std::size(special); ++i)
    std::memcpy(&values[i], &special[i], sizeof(float));
  const int64_t n = static_cast<int64_t>(values.size());
  for (bool bfloat16 : {true, false}) {
    std::vector<uint16_t> expected(n);
    std::vector<float> widened(n);
    if (bfloat16) {
      gradcomm::half::narrowBfloat16(values.data(), expected.data(), n);
      gradcomm::half::widenBfloat16(expected.data(), widened.data(), n);
    } else {
      gradcomm::half::narrowHalf(values.data(), expected.data(), n);
      gradcomm::half::widenHalf(expected.data(), widened.data(), n);
    }
    Device<float> in(values), back(static_cast<size_t>(n));
    Device<uint16_t> wire(static_cast<size_t>(n));
    // Whole and aligned (the 8-wide kernels), with a tail, and at an odd
    // offset (the scalar kernels: a shard's run on the wire).
    const std::pair<int64_t, int64_t> cases[] = {
        {0, n}, {0, n - 3}, {1, n - 4}, {3, 5}};
    for (auto [offset, length] : cases) {
      const std::string what = std::string(bfloat16 ? "bfloat16" : "binary16") +
                               " at offset " + std::to_string(offset) +
                               ", length " + std::to_string(length);
      ASSERT_EQ(gradcomm::cuda::narrowValues(in.ptr + offset, wire.ptr + offset,
                                             length, bfloat16, nullptr),
                cudaSuccess);
      ASSERT_EQ(gradcomm::cuda::widenValues(wire.ptr + offset,
                                            back.ptr + offset, length, bfloat16,
                                            nullptr),
                cudaSuccess);
      const std::vector<uint16_t> onWire = wire.host();
      EXPECT_EQ(std::vector<uint16_t>(onWire.begin() + offset,
                                      onWire.begin() + offset + length),
                std::vector<uint16_t>(expected.begin() + offset,
                                      expected.begin() + offset + length))
          << what;
      // Compared as bits (NaNs included): the first difference, if any.
      std::vector<uint32_t> deviceBits(length), hostBits(length);
      std::memcpy(deviceBits.data(), back.host().data() + offset, 4 * length);
      std::memcpy(hostBits.data(), widened.data() + offset, 4 * length);
      EXPECT_EQ(deviceBits, hostBits) << what << ": widened bits differ";
    }
  }
}

TEST(CudaKernels, NonFiniteScan) {
  std::vector<float> g = data(10000, 9);
  Device<float> clean(g);
  Device<int> flag(1);
  bool bad = true;
  ASSERT_EQ(gradcomm::cuda::anyNonFinite(nullptr, clean.ptr, 10000, 1e30f,
                                         flag.ptr, &bad, nullptr),
            cudaSuccess);
  EXPECT_FALSE(bad);
  g[1234] = std::numeric_limits<float>::infinity();
  Device<float> dirty(g);
  ASSERT_EQ(gradcomm::cuda::anyNonFinite(nullptr, dirty.ptr, 10000, 1e30f,
                                         flag.ptr, &bad, nullptr),
            cudaSuccess);
  EXPECT_TRUE(bad);
  // Finite, but above the limit.
  g[1234] = 2e30f;
  Device<float> large(g);
  ASSERT_EQ(gradcomm::cuda::anyNonFinite(nullptr, large.ptr, 10000, 1e30f,
                                         flag.ptr, &bad, nullptr),
            cudaSuccess);
  EXPECT_TRUE(bad);
  // m + g, as the CPU scans it: each below the limit, the sum above; and
  // a large g that the memory cancels.
  std::vector<float> m(10000, 0.0f);
  g[1234] = 6e29f;
  m[1234] = 6e29f;
  Device<float> half(g), memory(m);
  ASSERT_EQ(gradcomm::cuda::anyNonFinite(memory.ptr, half.ptr, 10000, 1e30f,
                                         flag.ptr, &bad, nullptr),
            cudaSuccess);
  EXPECT_TRUE(bad);
  m[1234] = -6e29f;
  Device<float> cancelling(m);
  ASSERT_EQ(gradcomm::cuda::anyNonFinite(cancelling.ptr, half.ptr, 10000, 1e30f,
                                         flag.ptr, &bad, nullptr),
            cudaSuccess);
  EXPECT_FALSE(bad);
}

} // namespace

int main(int argc, char **argv) {
  if (int rc = requireCudaDevice("CUDA kernel tests"))
    return rc;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
