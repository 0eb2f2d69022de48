//===- DenseAllReduceTest.cpp - Dense all-reduce against local sums -------===//
//
// Part of the GradComm project.
//
// Each rank's contribution is a function of (rank, index) the test can
// evaluate for every rank, so the expected result is computed locally,
// independently of MPI. Small integers keep the float sums exact.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/runtime.h"
#include "gradcomm/runtime_mpi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

float contribution(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * ((i % 7) - 3) + rank * 2);
}

struct World {
  int rank = 0;
  int size = 1;
  World() {
    EXPECT_EQ(gradcomm_rank(&rank), GRADCOMM_OK) << gradcomm_last_error();
    EXPECT_EQ(gradcomm_size(&size), GRADCOMM_OK) << gradcomm_last_error();
  }
};

std::vector<float> expectedSum(int size, int64_t count) {
  std::vector<float> sum(count, 0.0f);
  for (int r = 0; r < size; ++r)
    for (int64_t i = 0; i < count; ++i)
      sum[i] += contribution(r, i);
  return sum;
}

std::vector<float> localData(int rank, int64_t count) {
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i)
    data[i] = contribution(rank, i);
  return data;
}

TEST(DenseAllReduce, SumMatchesLocalReference) {
  World world;
  for (int64_t count : {1, 7, 1000, 100003}) {
    std::vector<float> data = localData(world.rank, count);
    ASSERT_EQ(gradcomm_dense_all_reduce_f32("sum_test", data.data(), count,
                                            GRADCOMM_REDUCE_SUM),
              GRADCOMM_OK)
        << gradcomm_last_error();
    EXPECT_EQ(data, expectedSum(world.size, count)) << "count " << count;
  }
}

TEST(DenseAllReduce, AverageDividesBySize) {
  World world;
  const int64_t count = 4099;
  std::vector<float> data = localData(world.rank, count);
  ASSERT_EQ(gradcomm_dense_all_reduce_f32("avg_test", data.data(), count,
                                          GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_OK)
      << gradcomm_last_error();
  std::vector<float> expected = expectedSum(world.size, count);
  for (float &v : expected)
    v /= static_cast<float>(world.size);
  EXPECT_EQ(data, expected);
}

TEST(DenseAllReduce, ZeroCountIsANoOp) {
  EXPECT_EQ(
      gradcomm_dense_all_reduce_f32("empty", nullptr, 0, GRADCOMM_REDUCE_SUM),
      GRADCOMM_OK)
      << gradcomm_last_error();
}

TEST(DenseAllReduce, NullDataIsRejectedWithOpRankAndCause) {
  World world;
  EXPECT_EQ(gradcomm_dense_all_reduce_f32("fc1_bias_grad", nullptr, 10,
                                          GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  // Every rank failed; every rank reports the lowest failing rank's
  // message (the agreement shares one message).
  std::string expected = "gradcomm: dense_all_reduce_f32 'fc1_bias_grad' on "
                         "rank 0 of " +
                         std::to_string(world.size) + ": data pointer is null";
  EXPECT_EQ(std::string(gradcomm_last_error()), expected);
}

TEST(DenseAllReduce, NegativeCountIsRejected) {
  float x = 1.0f;
  EXPECT_EQ(gradcomm_dense_all_reduce_f32("neg", &x, -1, GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(gradcomm_last_error()).find("count must be >= 0, got -1"),
      std::string::npos)
      << gradcomm_last_error();
  EXPECT_EQ(x, 1.0f);
}

TEST(DenseAllReduce, UnknownReductionIsRejected) {
  float x = 1.0f;
  EXPECT_EQ(gradcomm_dense_all_reduce_f32("bad", &x, 1,
                                          static_cast<gradcomm_reduction>(7)),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gradcomm_last_error()).find("unknown reduction 7"),
            std::string::npos);
}

TEST(Init, TrainerCommunicatorIsUsed) {
  // Re-initialize on a communicator of the even (or odd) world ranks only.
  int worldRank = 0, worldSize = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, worldRank % 2, worldRank, &half);
  ASSERT_EQ(gradcomm_finalize(), GRADCOMM_OK);
  ASSERT_EQ(gradcomm_init_with_comm(half), GRADCOMM_OK)
      << gradcomm_last_error();
  int size = 0;
  ASSERT_EQ(gradcomm_size(&size), GRADCOMM_OK);
  int expectedSize = worldSize / 2 + (worldRank % 2 == 0 ? worldSize % 2 : 0);
  EXPECT_EQ(size, expectedSize);

  float x = 1.0f;
  ASSERT_EQ(gradcomm_dense_all_reduce_f32("half", &x, 1, GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK);
  EXPECT_EQ(x, static_cast<float>(expectedSize));

  // A second, different communicator is refused while one is bound.
  EXPECT_EQ(gradcomm_init_with_comm(MPI_COMM_SELF),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gradcomm_last_error()).find("another communicator"),
            std::string::npos);
  EXPECT_EQ(gradcomm_init_with_comm(MPI_COMM_NULL),
            GRADCOMM_ERR_INVALID_ARGUMENT);

  // Back to MPI_COMM_WORLD for the tests that follow; MPI stays up because
  // the trainer (the test main) owns it.
  ASSERT_EQ(gradcomm_finalize(), GRADCOMM_OK);
  int finalized = 0;
  MPI_Finalized(&finalized);
  EXPECT_FALSE(finalized);
  MPI_Comm_free(&half);
  ASSERT_EQ(gradcomm_init(), GRADCOMM_OK);
}

TEST(Status, NamesAreStable) {
  EXPECT_STREQ(gradcomm_status_name(GRADCOMM_OK), "GRADCOMM_OK");
  EXPECT_STREQ(gradcomm_status_name(GRADCOMM_ERR_MISMATCH),
               "GRADCOMM_ERR_MISMATCH");
}

} // namespace

// The started form: three reductions in flight at once, waited for in
// reverse order, give what the blocking form gives; the buffers are only
// read after their wait.
TEST(DenseAllReduce, StartedRequestsMatchBlocking) {
  World world;
  const std::vector<int64_t> counts = {7, 1000, 100003};
  std::vector<std::vector<float>> data;
  std::vector<gradcomm_request> requests(counts.size(), nullptr);
  for (size_t i = 0; i < counts.size(); ++i) {
    data.push_back(localData(world.rank, counts[i]));
    ASSERT_EQ(gradcomm_dense_all_reduce_start_f32(
                  ("started_" + std::to_string(i)).c_str(), data[i].data(),
                  counts[i],
                  i == 1 ? GRADCOMM_REDUCE_AVERAGE : GRADCOMM_REDUCE_SUM,
                  &requests[i]),
              GRADCOMM_OK)
        << gradcomm_last_error();
    ASSERT_NE(requests[i], nullptr);
  }
  for (size_t i = counts.size(); i-- > 0;) {
    ASSERT_EQ(gradcomm_wait(&requests[i]), GRADCOMM_OK)
        << gradcomm_last_error();
    EXPECT_EQ(requests[i], nullptr);
    std::vector<float> blocking = localData(world.rank, counts[i]);
    ASSERT_EQ(gradcomm_dense_all_reduce_f32(
                  "blocking", blocking.data(), counts[i],
                  i == 1 ? GRADCOMM_REDUCE_AVERAGE : GRADCOMM_REDUCE_SUM),
              GRADCOMM_OK)
        << gradcomm_last_error();
    EXPECT_EQ(data[i], blocking) << "count " << counts[i];
  }
  gradcomm_op_stats stats{};
  ASSERT_EQ(gradcomm_stats_get("started_2", &stats), GRADCOMM_OK);
  EXPECT_EQ(stats.calls, 1u);
}

// A second wait, a null request pointer and a bad count are errors, on
// every rank alike (the count through the agreement); nothing is started.
TEST(DenseAllReduce, StartedRequestErrors) {
  World world;
  std::vector<float> data = localData(world.rank, 10);
  gradcomm_request request = nullptr;
  EXPECT_EQ(gradcomm_wait(&request), GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gradcomm_last_error()).find("no request"),
            std::string::npos)
      << gradcomm_last_error();
  EXPECT_EQ(gradcomm_dense_all_reduce_start_f32("bad", data.data(), 10,
                                                GRADCOMM_REDUCE_SUM, nullptr),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  const int64_t count = world.rank == 0 ? 10 : 9;
  gradcomm_status status = gradcomm_dense_all_reduce_start_f32(
      "mismatch", data.data(), world.size > 1 ? count : -1, GRADCOMM_REDUCE_SUM,
      &request);
  EXPECT_NE(status, GRADCOMM_OK);
  EXPECT_EQ(request, nullptr);
  ASSERT_EQ(gradcomm_dense_all_reduce_start_f32("again", data.data(), 10,
                                                GRADCOMM_REDUCE_SUM, &request),
            GRADCOMM_OK)
      << gradcomm_last_error();
  ASSERT_EQ(gradcomm_wait(&request), GRADCOMM_OK) << gradcomm_last_error();
  EXPECT_EQ(gradcomm_wait(&request), GRADCOMM_ERR_INVALID_ARGUMENT);
}

// Run-time bucketing: tensors of every kind (empty, tiny, small ones
// sharing a bucket, one that spills into a second bucket, large ones that
// go alone) in one call give what separate calls give (integer values:
// every order of addition is exact), sum and mean; the counters see one
// call and one MPI message per bucket or large tensor.
TEST(DenseAllReduce, ManyTensorsInOneCallMatchSeparateCalls) {
  World world;
  std::vector<int64_t> counts = {0, 3, 70000, 4095, 1};
  // 17 tensors of 4000 after the 4095: the 3, the 4095 and 15 of them fill
  // the first bucket (64098 elements), the last two and the 1 the second.
  counts.insert(counts.begin() + 4, 17, 4000);
  for (gradcomm_reduction reduction :
       {GRADCOMM_REDUCE_SUM, GRADCOMM_REDUCE_AVERAGE}) {
    std::vector<std::vector<float>> batch, separate;
    std::vector<float *> pointers;
    for (int64_t count : counts) {
      batch.push_back(localData(world.rank, count));
      separate.push_back(localData(world.rank, count));
    }
    for (auto &tensor : batch)
      pointers.push_back(tensor.data());
    ASSERT_EQ(gradcomm_dense_all_reduce_many_f32(
                  "many", pointers.data(), counts.data(),
                  static_cast<int64_t>(counts.size()), reduction),
              GRADCOMM_OK)
        << gradcomm_last_error();
    for (size_t t = 0; t < counts.size(); ++t) {
      ASSERT_EQ(gradcomm_dense_all_reduce_f32("one", separate[t].data(),
                                              counts[t], reduction),
                GRADCOMM_OK)
          << gradcomm_last_error();
      EXPECT_EQ(batch[t], separate[t]) << "tensor " << t;
    }
  }
  gradcomm_op_stats stats{};
  ASSERT_EQ(gradcomm_stats_get("many", &stats), GRADCOMM_OK);
  EXPECT_EQ(stats.calls, 2u);
  // Two buckets and the 70000 alone: three MPI calls per batch.
  EXPECT_EQ(stats.messages, 6u);
}

// Ranks that pass different shapes fail alike, with nothing reduced; the
// skip policy zeroes the whole batch on every rank.
TEST(DenseAllReduce, ManyTensorsAgreeAndFollowThePolicy) {
  World world;
  std::vector<float> a = localData(world.rank, 6), b = localData(world.rank, 9);
  float *pointers[2] = {a.data(), b.data()};
  if (world.size > 1) {
    // The same total (14), split differently on rank 0.
    const int64_t counts[2] = {world.rank == 0 ? 5 : 6,
                               world.rank == 0 ? 9 : 8};
    EXPECT_EQ(gradcomm_dense_all_reduce_many_f32(
                  "many_mismatch", pointers, counts, 2, GRADCOMM_REDUCE_SUM),
              GRADCOMM_ERR_MISMATCH);
    EXPECT_NE(std::string(gradcomm_last_error())
                  .find("ranks disagree on the tensors' element counts"),
              std::string::npos)
        << gradcomm_last_error();
    EXPECT_EQ(a, localData(world.rank, 6));
  }
  const int64_t counts[2] = {6, 9};
  if (world.rank == world.size - 1)
    b[4] = std::nanf("");
  ASSERT_EQ(gradcomm_set_nonfinite_policy(GRADCOMM_NONFINITE_SKIP),
            GRADCOMM_OK);
  EXPECT_EQ(gradcomm_dense_all_reduce_many_f32("many_skip", pointers, counts, 2,
                                               GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK)
      << gradcomm_last_error();
  ASSERT_EQ(gradcomm_set_nonfinite_policy(GRADCOMM_NONFINITE_ERROR),
            GRADCOMM_OK);
  EXPECT_EQ(a, std::vector<float>(6, 0.0f));
  EXPECT_EQ(b, std::vector<float>(9, 0.0f));
  EXPECT_EQ(gradcomm_dense_all_reduce_many_f32("many_null", nullptr, counts, 2,
                                               GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}
