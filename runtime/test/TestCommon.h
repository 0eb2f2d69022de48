//===- TestCommon.h - Test helpers without GoogleTest or MPI ----*- C++ -*-===//
//
// Part of the GradComm project.
//
// Shared by the GoogleTest tests (through TestUtil.h) and the GPU tests,
// which build against MiniTest.h where GoogleTest is missing.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_TEST_TESTCOMMON_H
#define GRADCOMM_RUNTIME_TEST_TESTCOMMON_H

#include "gradcomm/runtime.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradcomm::test {

/// A deterministic pseudo-random value in [-1, 1) for (rank, step, i), so
/// every rank can compute every other rank's gradient locally.
inline float gradientValue(uint64_t seed, int rank, uint64_t step, int64_t i) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull +
               static_cast<uint64_t>(rank) * 0xbf58476d1ce4e5b9ull +
               step * 0x94d049bb133111ebull + static_cast<uint64_t>(i);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<int64_t>(z >> 40) - (1 << 23)) /
         static_cast<float>(1 << 23);
}

inline std::vector<float> gradient(uint64_t seed, int rank, uint64_t step,
                                   int64_t count) {
  std::vector<float> g(count);
  for (int64_t i = 0; i < count; ++i)
    g[i] = gradientValue(seed, rank, step, i);
  return g;
}

/// FNV-1a of a float buffer's bits.
inline uint64_t hashBits(const std::vector<float> &data) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const unsigned char *bytes =
      reinterpret_cast<const unsigned char *>(data.data());
  for (size_t i = 0; i < data.size() * sizeof(float); ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

} // namespace gradcomm::test

// Expanded where GoogleTest's or MiniTest's EXPECT_EQ is defined.
#define EXPECT_OK(expr) EXPECT_EQ((expr), GRADCOMM_OK) << gradcomm_last_error()
#define ASSERT_OK(expr) ASSERT_EQ((expr), GRADCOMM_OK) << gradcomm_last_error()

#endif // GRADCOMM_RUNTIME_TEST_TESTCOMMON_H
