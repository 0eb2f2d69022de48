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

// Whether a ScaleCom call's indices ride in the agreement depends on k:
// a rank whose k fits (64 int32 indices, 256 bytes) and ranks whose k does
// not (65) still send agreements of one size, so the disagreement is
// refused on every rank with one message, nothing hangs, and no state or
// output changes; the corrected call then works.
TEST(Agreement, KThatFoldsOnOneRankOnlyIsRefused) {
  World world;
  SKIP_UNLESS_SEVERAL_RANKS(world);
  const int64_t count = 3000;
  std::string name = uniqueName("fold");
  std::vector<float> grad = gradient(80, world.rank, 0, count);
  std::vector<float> out(count, 7.0f);
  const int64_t k = world.rank == 0 ? 64 : 65;
  gradcomm_status status = gradcomm_scalecom_f32(
      name.c_str(), grad.data(), out.data(), count, k, GRADCOMM_SELECT_EXACT, 0,
      1.0f, GRADCOMM_REDUCE_AVERAGE);
  EXPECT_EQ(status, GRADCOMM_ERR_MISMATCH) << gradcomm_last_error();
  EXPECT_TRUE(sameEverywhere(static_cast<uint64_t>(status)));
  // Each rank names itself; the cause is the same everywhere.
  const std::string message = gradcomm_last_error();
  const size_t cause = message.find("ranks disagree on k (min 64, max 65)");
  ASSERT_NE(cause, std::string::npos) << message;
  EXPECT_TRUE(sameEverywhere(hashText(message.substr(cause))));
  EXPECT_EQ(out, std::vector<float>(count, 7.0f));
  EXPECT_FALSE(stateExists(name));
  EXPECT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), count,
                                  64, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE));
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
  EXPECT_TRUE(contains(gradcomm_last_error(), "nothing changed on any rank"));
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
  // Step 1 keeps 0.3 FLT_MAX / n in the memory of every unselected element
  // (below the limit FLT_MAX / 2n); in step 2 m + g = 0.6 FLT_MAX / n is
  // above it: the step is refused on every rank and the memory stays as it
  // was.
  World world;
  std::string name = uniqueName("w");
  const int64_t count = 64;
  const float large =
      0.3f * std::numeric_limits<float>::max() / static_cast<float>(world.size);
  std::vector<float> grad(count, large), out(count);
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

TEST(NonFinite, FiniteValuesWhoseSumWouldOverflowAreRefused) {
  // Each rank's 0.9 FLT_MAX is finite; their sum is not.
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  std::vector<float> data(8, 0.9f * std::numeric_limits<float>::max());
  EXPECT_EQ(gradcomm_dense_all_reduce_f32("nonfinite.sum", data.data(), 8,
                                          GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_NON_FINITE);
  EXPECT_EQ(data[0], 0.9f * std::numeric_limits<float>::max());
}

/// Sets a non-finite policy for one test and restores the default.
class PolicyScope {
public:
  explicit PolicyScope(gradcomm_nonfinite_policy policy) {
    EXPECT_OK(gradcomm_set_nonfinite_policy(policy));
  }
  ~PolicyScope() {
    EXPECT_OK(gradcomm_set_nonfinite_policy(GRADCOMM_NONFINITE_ERROR));
  }
};

TEST(NonFinitePolicy, SkipZeroesEveryOutputAndChangesNoState) {
  World world;
  PolicyScope skip(GRADCOMM_NONFINITE_SKIP);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const bool last = world.rank == world.size - 1;
  const int64_t count = 32, k = 4;
  // Dense: zeros on every rank.
  std::vector<float> data(count, 1.0f);
  if (last)
    data[3] = nan;
  EXPECT_OK(gradcomm_dense_all_reduce_f32("skip.dense", data.data(), count,
                                          GRADCOMM_REDUCE_SUM));
  EXPECT_EQ(data, std::vector<float>(count, 0.0f));
  gradcomm_op_stats stats{};
  EXPECT_OK(gradcomm_stats_get("skip.dense", &stats));
  EXPECT_EQ(stats.skipped_non_finite, 1u);
  // Fused ScaleCom and local top-k: zero output, memory and step as they
  // were (one finite step first, so the memory is not zero).
  for (bool local : {false, true}) {
    std::string name = uniqueName(local ? "l" : "s");
    auto run = [&](std::vector<float> &grad, std::vector<float> &out) {
      return local
                 ? gradcomm_local_topk_all_gather_f32(
                       name.c_str(), grad.data(), out.data(), count, k,
                       GRADCOMM_REDUCE_SUM, nullptr)
                 : gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(),
                                         count, k, GRADCOMM_SELECT_EXACT, 0,
                                         1.0f, GRADCOMM_REDUCE_SUM);
    };
    std::vector<float> grad = gradient(21, world.rank, 0, count), out(count);
    ASSERT_OK(run(grad, out));
    std::vector<float> memory(count), after(count);
    ASSERT_OK(gradcomm_state_read(name.c_str(), memory.data(), count));
    grad = gradient(21, world.rank, 1, count);
    if (last)
      grad[7] = -std::numeric_limits<float>::infinity();
    std::fill(out.begin(), out.end(), 5.0f);
    EXPECT_OK(run(grad, out)) << gradcomm_last_error();
    EXPECT_EQ(out, std::vector<float>(count, 0.0f)) << (local ? "local" : "");
    ASSERT_OK(gradcomm_state_read(name.c_str(), after.data(), count));
    EXPECT_EQ(after, memory);
    uint64_t step = 0;
    ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
    EXPECT_EQ(step, 1u);
  }
  // The unfused chain: compress gives zero values at valid indices, the
  // reduce zeros, the memory update changes nothing.
  std::string name = uniqueName("u");
  std::vector<float> grad = gradient(22, world.rank, 0, count);
  if (last)
    grad[0] = nan;
  std::vector<float> values(k, 9.0f), out(count, 9.0f);
  std::vector<int64_t> indices(k, -1);
  EXPECT_OK(gradcomm_cltk_compress_f32(name.c_str(), grad.data(), count, k,
                                       GRADCOMM_SELECT_EXACT, 0, values.data(),
                                       indices.data()));
  EXPECT_EQ(values, std::vector<float>(k, 0.0f));
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_OK(gradcomm_sparse_all_reduce_f32("u.reduce", values.data(),
                                           indices.data(), k, out.data(), count,
                                           GRADCOMM_REDUCE_SUM));
  EXPECT_EQ(out, std::vector<float>(count, 0.0f));
  EXPECT_OK(gradcomm_memory_update_f32(name.c_str(), grad.data(), count,
                                       indices.data(), k, 1.0f));
  std::vector<float> memory(count);
  ASSERT_OK(gradcomm_state_read(name.c_str(), memory.data(), count));
  EXPECT_EQ(memory, std::vector<float>(count, 0.0f));
  uint64_t step = 0;
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 0u);
}

TEST(NonFinitePolicy, SkippedGossipKeepsTheReplica) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  PolicyScope skip(GRADCOMM_NONFINITE_SKIP);
  std::string name = uniqueName("g");
  std::vector<float> x(8, static_cast<float>(world.rank));
  if (world.rank == 0)
    x[0] = std::numeric_limits<float>::infinity();
  const std::vector<float> before = x;
  EXPECT_OK(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 8,
                                         GRADCOMM_SCHEDULE_RING, 0.5f, 1, 1));
  EXPECT_EQ(x, before);
  uint64_t step = 0;
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 0u);
}

TEST(NonFinitePolicy, PropagateLetsNaNThrough) {
  World world;
  PolicyScope propagate(GRADCOMM_NONFINITE_PROPAGATE);
  std::vector<float> data(4, 1.0f);
  if (world.rank == world.size - 1)
    data[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_OK(gradcomm_dense_all_reduce_f32("propagate.dense", data.data(), 4,
                                          GRADCOMM_REDUCE_SUM));
  EXPECT_TRUE(std::isnan(data[1]));
  EXPECT_EQ(data[0], static_cast<float>(world.size));
}

TEST(NonFinitePolicy, RanksWithDifferentPoliciesAreRefused) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  PolicyScope policy(world.rank == 0 ? GRADCOMM_NONFINITE_SKIP
                                     : GRADCOMM_NONFINITE_ERROR);
  std::vector<float> data(4, 1.0f);
  EXPECT_EQ(gradcomm_dense_all_reduce_f32("policy.mismatch", data.data(), 4,
                                          GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_MISMATCH);
  EXPECT_TRUE(contains(gradcomm_last_error(), "the non-finite policy"))
      << gradcomm_last_error();
}

TEST(NonFinitePolicy, UnknownPolicyIsRefused) {
  EXPECT_EQ(
      gradcomm_set_nonfinite_policy(static_cast<gradcomm_nonfinite_policy>(7)),
      GRADCOMM_ERR_INVALID_ARGUMENT);
  gradcomm_nonfinite_policy policy = GRADCOMM_NONFINITE_SKIP;
  EXPECT_OK(gradcomm_get_nonfinite_policy(&policy));
  EXPECT_EQ(policy, GRADCOMM_NONFINITE_ERROR);
}
