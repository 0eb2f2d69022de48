//===- GroupTest.cpp - Collectives among the ranks of grid axes -----------===//
//
// Part of the GradComm project.
//
// The job's n ranks as a rows x cols grid (cols = 2 when n is even, else
// 1; rank = row * cols + col): collectives over axis 0 run among the ranks
// of one column, over axis 1 among those of one row, over both among every
// rank. At 4 ranks this is the 2x2 grid of data parallelism inside a 2-D
// grid.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstdio>

using namespace gradcomm::test;

namespace {

struct Grid {
  int64_t shape[2];
  int rank, row, col;
  Grid() {
    World world;
    const int cols = world.size % 2 == 0 ? 2 : 1;
    shape[0] = world.size / cols;
    shape[1] = cols;
    rank = world.rank;
    row = world.rank / cols;
    col = world.rank % cols;
  }
  int64_t rows() const { return shape[0]; }
  int64_t cols() const { return shape[1]; }
  int rankAt(int64_t r, int64_t c) const {
    return static_cast<int>(r * cols() + c);
  }
  gradcomm_group over(std::initializer_list<int32_t> axes) const {
    gradcomm_group group = nullptr;
    std::vector<int32_t> list(axes);
    EXPECT_OK(gradcomm_group_from_grid(
        shape, 2, list.data(), static_cast<int32_t>(list.size()), &group));
    return group;
  }
};

/// Selects every rank again when a test ends, whatever it did.
struct BackToEveryRank {
  ~BackToEveryRank() { gradcomm_group_use(nullptr); }
};

/// This rank's contribution: distinct small integers, so sums are exact.
std::vector<float> contribution(int rank) {
  return {static_cast<float>(rank + 1), static_cast<float>(10 * (rank + 1)),
          static_cast<float>(-3 * rank)};
}

std::vector<float> sumOver(const std::vector<int> &ranks) {
  std::vector<float> sum(3, 0.0f);
  for (int rank : ranks) {
    std::vector<float> part = contribution(rank);
    for (size_t i = 0; i < sum.size(); ++i)
      sum[i] += part[i];
  }
  return sum;
}

std::vector<int> columnOf(const Grid &grid) {
  std::vector<int> ranks;
  for (int64_t r = 0; r < grid.rows(); ++r)
    ranks.push_back(grid.rankAt(r, grid.col));
  return ranks;
}

std::vector<int> rowOf(const Grid &grid) {
  std::vector<int> ranks;
  for (int64_t c = 0; c < grid.cols(); ++c)
    ranks.push_back(grid.rankAt(grid.row, c));
  return ranks;
}

} // namespace

TEST(Group, DenseAllReduceOverEachAxis) {
  Grid grid;
  BackToEveryRank restore;
  gradcomm_group columns = grid.over({0}), rows = grid.over({1});
  int rank = -1, size = -1;
  ASSERT_OK(gradcomm_group_rank(columns, &rank, &size));
  EXPECT_EQ(rank, grid.row);
  EXPECT_EQ(size, grid.rows());
  ASSERT_OK(gradcomm_group_rank(rows, &rank, &size));
  EXPECT_EQ(rank, grid.col);
  EXPECT_EQ(size, grid.cols());

  std::vector<float> data = contribution(grid.rank);
  ASSERT_OK(gradcomm_group_use(columns));
  ASSERT_OK(gradcomm_dense_all_reduce_f32("column", data.data(), 3,
                                          GRADCOMM_REDUCE_SUM));
  EXPECT_EQ(data, sumOver(columnOf(grid)));

  data = contribution(grid.rank);
  ASSERT_OK(gradcomm_group_use(rows));
  ASSERT_OK(gradcomm_dense_all_reduce_f32("row", data.data(), 3,
                                          GRADCOMM_REDUCE_SUM));
  EXPECT_EQ(data, sumOver(rowOf(grid)));

  // Back to every rank: the whole job's sum; the job-wide queries never
  // changed.
  std::vector<int> everyRank;
  for (int r = 0; r < grid.rows() * grid.cols(); ++r)
    everyRank.push_back(r);
  data = contribution(grid.rank);
  ASSERT_OK(gradcomm_group_use(nullptr));
  ASSERT_OK(gradcomm_dense_all_reduce_f32("all", data.data(), 3,
                                          GRADCOMM_REDUCE_SUM));
  EXPECT_EQ(data, sumOver(everyRank));
  ASSERT_OK(gradcomm_rank(&rank));
  EXPECT_EQ(rank, grid.rank);
}

TEST(Group, SameHandleAndBothAxesAreEveryRank) {
  Grid grid;
  EXPECT_EQ(grid.over({0}), grid.over({0}));
  EXPECT_EQ(grid.over({1, 0}), grid.over({0, 1}));
  int rank = -1, size = -1;
  ASSERT_OK(gradcomm_group_rank(grid.over({0, 1}), &rank, &size));
  World world;
  EXPECT_EQ(rank, world.rank);
  EXPECT_EQ(size, world.size);
  ASSERT_OK(gradcomm_group_rank(nullptr, &rank, &size));
  EXPECT_EQ(size, world.size);
}

TEST(Group, ScaleComAndGossipRunInTheGroup) {
  Grid grid;
  BackToEveryRank restore;
  ASSERT_OK(gradcomm_group_use(grid.over({0})));
  // k = count: the first step's ScaleCom output is the group's exact sum
  // (the memory starts at zero).
  std::vector<float> grad = contribution(grid.rank), out(3);
  ASSERT_OK(gradcomm_scalecom_f32(uniqueName("m").c_str(), grad.data(),
                                  out.data(), 3, 3, GRADCOMM_SELECT_EXACT, 0,
                                  1.0f, GRADCOMM_REDUCE_SUM));
  EXPECT_EQ(out, sumOver(columnOf(grid)));

  // Gossip pairs ranks of the group: with mixing 1/2 a pair averages.
  ASSERT_OK(gradcomm_group_use(grid.over({1})));
  std::vector<float> x = contribution(grid.rank);
  ASSERT_OK(gradcomm_gossip_exchange_f32(uniqueName("g").c_str(), x.data(), 3,
                                         GRADCOMM_SCHEDULE_MATCHING, 0.5f, 7,
                                         1));
  std::vector<float> expected = contribution(grid.rank);
  if (grid.cols() == 2) {
    std::vector<float> peer = contribution(grid.rankAt(grid.row, 1 - grid.col));
    for (size_t i = 0; i < expected.size(); ++i)
      expected[i] = 0.5f * expected[i] + 0.5f * peer[i];
  }
  EXPECT_EQ(x, expected);
}

TEST(Group, AGridOfAnotherSizeFailsEveryRank) {
  World world;
  int64_t shape[1] = {world.size + 1};
  int32_t axis = 0;
  gradcomm_group group = nullptr;
  EXPECT_EQ(gradcomm_group_from_grid(shape, 1, &axis, 1, &group),
            GRADCOMM_ERR_MISMATCH);
  std::string message = gradcomm_last_error();
  EXPECT_TRUE(contains(message, "has " + std::to_string(world.size + 1) +
                                    " processes but the job has " +
                                    std::to_string(world.size) + " ranks"))
      << message;
  EXPECT_EQ(group, nullptr);

  int64_t square[2] = {static_cast<int64_t>(world.size), 1};
  int32_t axes[2] = {1, 1};
  EXPECT_EQ(gradcomm_group_from_grid(square, 2, axes, 2, &group),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "axis 1 is named twice"))
      << gradcomm_last_error();
  axes[0] = 2;
  EXPECT_EQ(gradcomm_group_from_grid(square, 2, axes, 1, &group),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(
      contains(gradcomm_last_error(), "axis 2 is not an axis of a 2-axis grid"))
      << gradcomm_last_error();
  EXPECT_EQ(gradcomm_group_use(reinterpret_cast<gradcomm_group>(&axes)),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

// Ranks asking for different groups fail alike instead of splitting the
// job wrongly, even with the consistency check switched off.
TEST(Group, RanksAskingForDifferentGroupsFailAlike) {
  Grid grid;
  if (grid.cols() < 2 || grid.rows() < 2)
    GTEST_SKIP() << "needs a grid with two non-trivial axes (4 ranks)";
  ASSERT_OK(gradcomm_set_consistency_check(0));
  // A 2-axis spec nobody asked for before: the cache cannot answer.
  int64_t shape[3] = {grid.rows(), grid.cols(), 1};
  int32_t axis = grid.rank == 0 ? 0 : 1;
  gradcomm_group group = nullptr;
  gradcomm_status status = gradcomm_group_from_grid(shape, 3, &axis, 1, &group);
  std::string message = gradcomm_last_error();
  ASSERT_OK(gradcomm_set_consistency_check(1));
  EXPECT_EQ(status, GRADCOMM_ERR_MISMATCH) << message;
  EXPECT_TRUE(contains(message, "ranks disagree on the grid and axes"))
      << message;
  EXPECT_EQ(group, nullptr);
}

TEST(Group, ADisagreementInsideAGroupNamesTheGroup) {
  Grid grid;
  if (grid.cols() < 2)
    GTEST_SKIP() << "needs an even number of ranks";
  BackToEveryRank restore;
  ASSERT_OK(gradcomm_group_use(grid.over({1})));
  // Column 1 of every row passes one element more: every row disagrees.
  std::vector<float> data(4, 1.0f);
  gradcomm_status status = gradcomm_dense_all_reduce_f32(
      "mismatch", data.data(), grid.col == 1 ? 4 : 3, GRADCOMM_REDUCE_SUM);
  std::string message = gradcomm_last_error();
  EXPECT_EQ(status, GRADCOMM_ERR_MISMATCH) << message;
  EXPECT_TRUE(contains(message, "ranks disagree on count")) << message;
  if (grid.rows() == 1) {
    // A 1x2 grid's row is every rank: no group to name.
    EXPECT_FALSE(contains(message, "in the group")) << message;
  } else {
    EXPECT_TRUE(contains(message, "in the group over axes [1] of grid " +
                                      std::to_string(grid.rows()) + "x2"))
        << message;
    EXPECT_TRUE(contains(message, "of " + std::to_string(grid.rows() * 2) +
                                      " in the job)"))
        << message;
  }
  // The group still works after the refused call.
  ASSERT_OK(gradcomm_dense_all_reduce_f32("mismatch", data.data(), 3,
                                          GRADCOMM_REDUCE_SUM));
  EXPECT_EQ(data[0], 2.0f);
}

TEST(Group, CheckpointsAreJobWide) {
  Grid grid;
  BackToEveryRank restore;
  std::string name = uniqueName("m");
  ASSERT_OK(gradcomm_group_use(grid.over({0})));
  std::vector<float> grad = contribution(grid.rank), out(3);
  // k = 1: the memory keeps the two elements not sent.
  ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), 3, 1,
                                  GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_SUM));
  std::vector<float> memory(3);
  ASSERT_OK(gradcomm_state_read(name.c_str(), memory.data(), 3));
  const std::string path = ::testing::TempDir() + "gradcomm_group_np" +
                           std::to_string(grid.rows() * grid.cols());
  const std::string rankFile = path + ".rank" + std::to_string(grid.rank);
  auto removeFiles = [&] {
    for (const char *suffix : {"", ".prev", ".tmp"})
      std::remove((rankFile + suffix).c_str());
  };
  removeFiles();
  // Saved and restored with a group active: every rank takes part.
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  ASSERT_OK(gradcomm_state_reset(name.c_str()));
  ASSERT_OK(gradcomm_state_restore(path.c_str()));
  std::vector<float> restored(3);
  ASSERT_OK(gradcomm_state_read(name.c_str(), restored.data(), 3));
  EXPECT_EQ(restored, memory);
  uint64_t generation = 0;
  ASSERT_OK(gradcomm_state_generation(&generation));
  EXPECT_TRUE(sameOnAllRanks({static_cast<float>(generation)}));
  removeFiles();
}
