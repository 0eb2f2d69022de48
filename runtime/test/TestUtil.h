//===- TestUtil.h - Helpers shared by the runtime tests ---------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_TEST_TESTUTIL_H
#define GRADCOMM_RUNTIME_TEST_TESTUTIL_H

#include "gradcomm/runtime.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace gradcomm::test {

/// This process's place in MPI_COMM_WORLD.
struct World {
  int rank = 0;
  int size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

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

/// True when `data` has the same bits on every rank.
inline bool sameOnAllRanks(const std::vector<float> &data) {
  uint64_t hash = hashBits(data);
  uint64_t min = 0, max = 0;
  MPI_Allreduce(&hash, &min, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&hash, &max, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return min == max;
}

/// A state name unique to one test, so tests do not share state.
inline std::string uniqueName(const std::string &base) {
  const ::testing::TestInfo *info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  return base + "." + info->test_suite_name() + "." + info->name();
}

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

#define EXPECT_OK(expr) EXPECT_EQ((expr), GRADCOMM_OK) << gradcomm_last_error()
#define ASSERT_OK(expr) ASSERT_EQ((expr), GRADCOMM_OK) << gradcomm_last_error()

} // namespace gradcomm::test

#endif // GRADCOMM_RUNTIME_TEST_TESTUTIL_H
