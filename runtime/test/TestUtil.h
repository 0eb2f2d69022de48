//===- TestUtil.h - Helpers shared by the runtime tests ---------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_TEST_TESTUTIL_H
#define GRADCOMM_RUNTIME_TEST_TESTUTIL_H

#include "TestCommon.h"
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

/// The memory of the runtime state `name` on this rank.
inline std::vector<float> readState(const std::string &name, int64_t count) {
  std::vector<float> data(count);
  EXPECT_EQ(gradcomm_state_read(name.c_str(), data.data(), count), GRADCOMM_OK)
      << gradcomm_last_error();
  return data;
}

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace gradcomm::test

#endif // GRADCOMM_RUNTIME_TEST_TESTUTIL_H
