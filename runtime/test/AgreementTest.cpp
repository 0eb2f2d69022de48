//===- AgreementTest.cpp - A failure on one rank is a failure on all
//-------===//
//
// Part of the GradComm project.
//
// Each case makes one rank's call differ from the others' (a bad argument,
// a state of another size, another operation, another tensor) and checks
// that every rank returns the same status with the same message, at once
// (a hang here is what the cases used to do), and that nothing was created
// on any rank. Needs 2 or more ranks.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace gradcomm::test;

namespace {

/// FNV-1a of a string, for comparing messages across ranks.
uint64_t hashText(const std::string &text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text)
    hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

/// True when every rank holds the same `value`.
bool sameEverywhere(uint64_t value) {
  uint64_t min = 0, max = 0;
  MPI_Allreduce(&value, &min, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&value, &max, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return min == max;
}

/// The status of `status` on every rank, and the same last error.
void expectAgreedFailure(gradcomm_status status, gradcomm_status expected,
                         const std::string &part) {
  std::string message = gradcomm_last_error();
  EXPECT_EQ(status, expected) << message;
  EXPECT_TRUE(contains(message, part)) << message;
  EXPECT_TRUE(sameEverywhere(static_cast<uint64_t>(status)));
  EXPECT_TRUE(sameEverywhere(hashText(message)))
      << "messages differ across ranks; this rank: " << message;
}

bool stateExists(const std::string &name) {
  uint64_t step = 0;
  return gradcomm_state_step(name.c_str(), &step) == GRADCOMM_OK;
}

#define SKIP_UNLESS_SEVERAL_RANKS(world)                                       \
  if ((world).size < 2)                                                        \
  GTEST_SKIP() << "needs two ranks"

} // namespace

TEST(Agreement, NullPointerOnOneRankFailsEveryRank) {
  World world;
  SKIP_UNLESS_SEVERAL_RANKS(world);
  std::string name = uniqueName("w");
  std::vector<float> grad(100, 1.0f), out(100);
  const float *passed = world.rank == 1 ? nullptr : grad.data();
  gradcomm_status status = gradcomm_scalecom_f32(
      name.c_str(), passed, out.data(), 100, 5, GRADCOMM_SELECT_EXACT, 0, 1.0f,
      GRADCOMM_REDUCE_AVERAGE);
  expectAgreedFailure(status, GRADCOMM_ERR_INVALID_ARGUMENT,
                      "on rank 1 of " + std::to_string(world.size) +
                          ": 'grad' is null");
  // The ranks that were fine created nothing.
  EXPECT_FALSE(stateExists(name));
  // And the next, correct call works everywhere.
  EXPECT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), 100, 5,
                                  GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE));
}

TEST(Agreement, DenseNullOnOneRankFailsEveryRank) {
  World world;
  SKIP_UNLESS_SEVERAL_RANKS(world);
  std::vector<float> data(10, 1.0f);
  float *passed = world.rank == world.size - 1 ? nullptr : data.data();
  expectAgreedFailure(gradcomm_dense_all_reduce_f32("agreement.dense", passed,
                                                    10, GRADCOMM_REDUCE_SUM),
                      GRADCOMM_ERR_INVALID_ARGUMENT, "data pointer is null");
}

TEST(Agreement, StateOfAnotherSizeOnOneRank) {
  World world;
  SKIP_UNLESS_SEVERAL_RANKS(world);
  std::string name = uniqueName("w");
  if (world.rank == 1)
    ASSERT_OK(gradcomm_state_declare(name.c_str(), 50));
  std::vector<float> grad(100, 1.0f), out(100);
  expectAgreedFailure(gradcomm_scalecom_f32(name.c_str(), grad.data(),
                                            out.data(), 100, 5,
                                            GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                            GRADCOMM_REDUCE_AVERAGE),
                      GRADCOMM_ERR_STATE, "has 50 elements");
  // Only rank 1's own declaration exists; the others created nothing, so
  // a corrected call (50 elements everywhere) works on every rank.
  EXPECT_EQ(stateExists(name), world.rank == 1);
  EXPECT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), 50, 5,
                                  GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE));
}

TEST(Agreement, DifferentOperationsAreRefusedNotMixed) {
  World world;
  SKIP_UNLESS_SEVERAL_RANKS(world);
  std::string name = uniqueName("w");
  std::vector<float> grad(100, 1.0f), out(100);
  gradcomm_status status =
      world.rank == 0
          ? gradcomm_local_topk_all_gather_f32(name.c_str(), grad.data(),
                                               out.data(), 100, 5,
                                               GRADCOMM_REDUCE_AVERAGE, nullptr)
          : gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), 100, 5,
                                  GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE);
  EXPECT_EQ(status, GRADCOMM_ERR_MISMATCH) << gradcomm_last_error();
  EXPECT_TRUE(
      contains(gradcomm_last_error(), "ranks disagree on the operation"))
      << gradcomm_last_error();
  EXPECT_TRUE(sameEverywhere(static_cast<uint64_t>(status)));
  EXPECT_FALSE(stateExists(name));
}

TEST(Agreement, TensorsReducedInAnotherOrderAreRefused) {
  World world;
  SKIP_UNLESS_SEVERAL_RANKS(world);
  std::vector<float> a(8, 1.0f), b(8, 2.0f);
  const char *first = world.rank == 0 ? "agreement.b" : "agreement.a";
  const char *second = world.rank == 0 ? "agreement.a" : "agreement.b";
  std::vector<float> &x = world.rank == 0 ? b : a;
  std::vector<float> &y = world.rank == 0 ? a : b;
  EXPECT_EQ(
      gradcomm_dense_all_reduce_f32(first, x.data(), 8, GRADCOMM_REDUCE_SUM),
      GRADCOMM_ERR_MISMATCH);
  EXPECT_TRUE(
      contains(gradcomm_last_error(), "ranks disagree on the op or state name"))
      << gradcomm_last_error();
  EXPECT_EQ(
      gradcomm_dense_all_reduce_f32(second, y.data(), 8, GRADCOMM_REDUCE_SUM),
      GRADCOMM_ERR_MISMATCH);
  // Nothing was reduced: the data is untouched.
  EXPECT_EQ(a, std::vector<float>(8, 1.0f));
  EXPECT_EQ(b, std::vector<float>(8, 2.0f));
}

TEST(NonFinite, DenseAllReduceSkipsOnEveryRank) {
  World world;
  std::vector<float> data(8, 1.0f);
  if (world.rank == world.size - 1)
    data[3] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> before = data;
  EXPECT_EQ(gradcomm_dense_all_reduce_f32("nonfinite.dense", data.data(), 8,
                                          GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_NON_FINITE)
      << gradcomm_last_error();
  EXPECT_TRUE(contains(gradcomm_last_error(), "step skipped on every rank"));
  // Untouched, NaN included (compared as bits).
  EXPECT_EQ(std::memcmp(data.data(), before.data(), sizeof(float) * 8), 0);
}

TEST(NonFinite, GossipSkipsOnEveryRank) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  std::string name = uniqueName("g");
  std::vector<float> x(8, static_cast<float>(world.rank));
  if (world.rank == 0)
    x[0] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 8,
                                         GRADCOMM_SCHEDULE_RING, 0.5f, 1, 1),
            GRADCOMM_ERR_NON_FINITE)
      << gradcomm_last_error();
  EXPECT_EQ(x[1], static_cast<float>(world.rank));
}

TEST(NonFinite, FiniteGradientThatWouldOverflowTheMemory) {
  // Step 1 keeps 3e38 in the memory of every unselected element; in step 2
  // m + g = 6e38 overflows to inf: the step is refused on every rank and
  // the memory stays finite.
  World world;
  std::string name = uniqueName("w");
  const int64_t count = 64;
  std::vector<float> grad(count, 3e38f), out(count);
  ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), count,
                                  1, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE));
  EXPECT_EQ(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), count,
                                  1, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_NON_FINITE)
      << gradcomm_last_error();
  std::vector<float> memory(count);
  ASSERT_OK(gradcomm_state_read(name.c_str(), memory.data(), count));
  for (float m : memory)
    EXPECT_TRUE(std::isfinite(m)) << m;
  uint64_t step = 0;
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 1u);
}
