//===- LearnersTest.cpp - The simulated learners against references -------===//
//
// Part of the GradComm project.
//
// gradcomm/runtime_learners.h in one process, no MPI: ScaleCom against the
// reference written from the paper (ScaleComReference.h), local top-k and
// the dense all-reduce against sums written here, and the refusals. The
// bits against real ranks are test/Python/test_learners.py's.
//
//===----------------------------------------------------------------------===//

#include "ScaleComReference.h"
#include "gradcomm/runtime_learners.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

using gradcomm::test::Reference;

namespace {

/// n rows of `count` wide-ranged values, one seed per step.
std::vector<std::vector<float>> gradients(int n, int64_t count, int step) {
  std::mt19937 engine(1000 + step);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> rows(n, std::vector<float>(count));
  for (auto &row : rows) {
    const float scale = std::exp(normal(engine));
    for (float &value : row)
      value = normal(engine) * scale;
  }
  return rows;
}

std::vector<float> flat(const std::vector<std::vector<float>> &rows) {
  std::vector<float> all;
  for (const auto &row : rows)
    all.insert(all.end(), row.begin(), row.end());
  return all;
}

struct Group {
  gradcomm_learners group = nullptr;
  explicit Group(int n) {
    EXPECT_EQ(gradcomm_learners_create(n, &group), GRADCOMM_OK)
        << gradcomm_last_error();
  }
  ~Group() { gradcomm_learners_destroy(group); }
};

gradcomm_scalecom_options plainOptions(int64_t k, float beta) {
  gradcomm_scalecom_options options;
  gradcomm_scalecom_options_init(&options, k);
  options.warmup_steps = 0;
  options.beta = beta;
  return options;
}

} // namespace

// Three learners: the pairwise tree (r0 + r1) + r2 is also the reference's
// left-to-right sum, so the bits must agree, with the leader rotating.
TEST(Learners, ScaleComIsThePapersAlgorithm) {
  const int n = 3;
  const int64_t count = 5000, k = 50;
  for (gradcomm_selection selection :
       {GRADCOMM_SELECT_EXACT, GRADCOMM_SELECT_CHUNK}) {
    const int64_t chunk = selection == GRADCOMM_SELECT_CHUNK ? 100 : 0;
    Group g(n);
    Reference reference(n, count, k, selection, chunk, 0.5f,
                        GRADCOMM_REDUCE_AVERAGE);
    gradcomm_scalecom_options options = plainOptions(k, 0.5f);
    options.selection = selection;
    options.chunk_size = chunk;
    for (int step = 0; step < 5; ++step) {
      auto rows = gradients(n, count, step);
      std::vector<float> all = flat(rows), out(count);
      ASSERT_EQ(gradcomm_learners_scalecom_recipe_f32(
                    g.group, "w", all.data(), out.data(), count, &options,
                    GRADCOMM_REDUCE_AVERAGE),
                GRADCOMM_OK)
          << gradcomm_last_error();
      std::vector<float> expected = reference.run(rows);
      ASSERT_EQ(std::memcmp(out.data(), expected.data(), sizeof(float) * count),
                0)
          << "step " << step << ", selection " << selection;
    }
    for (int r = 0; r < n; ++r) {
      std::vector<float> memory(count);
      ASSERT_EQ(
          gradcomm_learners_state_read(g.group, "w", r, memory.data(), count),
          GRADCOMM_OK);
      EXPECT_EQ(std::memcmp(memory.data(), reference.memory[r].data(),
                            sizeof(float) * count),
                0)
          << "learner " << r;
    }
  }
}

// Each learner its own top-k of m + g, plain error feedback; the blocks
// summed in learner order, the union's entries divided by n.
TEST(Learners, LocalTopkSumsTheLearnersOwnSelections) {
  const int n = 4;
  const int64_t count = 2000, k = 20;
  Group g(n);
  std::vector<std::vector<float>> memory(n, std::vector<float>(count, 0.0f));
  for (int step = 0; step < 3; ++step) {
    auto rows = gradients(n, count, step);
    std::vector<float> all = flat(rows), out(count);
    int64_t unionSize = -1;
    ASSERT_EQ(gradcomm_learners_local_topk_f32(
                  g.group, "t", all.data(), out.data(), count, k,
                  GRADCOMM_REDUCE_AVERAGE, &unionSize),
              GRADCOMM_OK)
        << gradcomm_last_error();
    Reference select(1, count, k, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                     GRADCOMM_REDUCE_SUM);
    std::vector<float> expected(count, 0.0f);
    std::set<int64_t> chosen;
    for (int r = 0; r < n; ++r) {
      std::vector<float> p(count);
      for (int64_t i = 0; i < count; ++i)
        p[i] = memory[r][i] + rows[r][i];
      std::vector<int64_t> indices = select.select(p);
      std::vector<char> sent(count, 0);
      for (int64_t index : indices) {
        expected[index] += p[index];
        sent[index] = 1;
        chosen.insert(index);
      }
      for (int64_t i = 0; i < count; ++i)
        memory[r][i] = sent[i] ? 0.0f : p[i];
    }
    for (int64_t index : chosen)
      expected[index] /= static_cast<float>(n);
    EXPECT_EQ(unionSize, static_cast<int64_t>(chosen.size()));
    EXPECT_EQ(std::memcmp(out.data(), expected.data(), sizeof(float) * count),
              0)
        << "step " << step;
  }
}

// The dense sum in the transport's order: ((r0 + r1) + (r2 + r3)).
TEST(Learners, DenseSumsInPairs) {
  const int64_t count = 1000;
  Group g(4);
  auto rows = gradients(4, count, 0);
  std::vector<float> all = flat(rows), out(count);
  ASSERT_EQ(gradcomm_learners_dense_f32(g.group, "d", all.data(), out.data(),
                                        count, GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_OK);
  for (int64_t i = 0; i < count; ++i) {
    const float sum = (rows[0][i] + rows[1][i]) + (rows[2][i] + rows[3][i]);
    ASSERT_EQ(out[i], sum / 4.0f) << i;
  }
  gradcomm_op_stats stats{};
  ASSERT_EQ(gradcomm_learners_stats_get(g.group, "d", &stats), GRADCOMM_OK);
  EXPECT_EQ(stats.calls, 1u);
  // A ring all-reduce: 2 (n - 1) / n of the 4000 bytes.
  EXPECT_EQ(stats.value_bytes_sent, 6000u);
}

// The recipe's dense warm-up and momentum correction: a dense step sends
// u' = mu u + g, which is the mean of the learners' velocities.
TEST(Learners, RecipeWarmUpAveragesTheVelocities) {
  const int n = 2;
  const int64_t count = 3000;
  Group g(n);
  gradcomm_scalecom_options options;
  gradcomm_scalecom_options_init(&options, 30);
  options.warmup_steps = 2;
  options.momentum = 0.9f;
  std::vector<std::vector<float>> velocity(n, std::vector<float>(count, 0.0f));
  for (int step = 0; step < 2; ++step) {
    auto rows = gradients(n, count, step);
    std::vector<float> all = flat(rows), out(count);
    ASSERT_EQ(gradcomm_learners_scalecom_recipe_f32(g.group, "v", all.data(),
                                                    out.data(), count, &options,
                                                    GRADCOMM_REDUCE_AVERAGE),
              GRADCOMM_OK)
        << gradcomm_last_error();
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        velocity[r][i] = 0.9f * velocity[r][i] + rows[r][i];
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(out[i], (velocity[0][i] + velocity[1][i]) / 2.0f) << i;
  }
  std::vector<float> read(count);
  ASSERT_EQ(gradcomm_learners_state_read(g.group, "v.velocity", 1, read.data(),
                                         count),
            GRADCOMM_OK);
  EXPECT_EQ(std::memcmp(read.data(), velocity[1].data(), sizeof(float) * count),
            0);
}

TEST(Learners, RefusesBadInputWithTheReason) {
  gradcomm_learners none = nullptr;
  EXPECT_EQ(gradcomm_learners_create(1, &none), GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gradcomm_last_error()).find("learners"),
            std::string::npos);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(gradcomm_learners_create(1025, &none),
            GRADCOMM_ERR_INVALID_ARGUMENT);

  Group g(2);
  std::vector<float> rows(2 * 100, 1.0f), out(100);
  rows[150] = NAN;
  EXPECT_EQ(gradcomm_learners_dense_f32(g.group, "nan", rows.data(), out.data(),
                                        100, GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_NON_FINITE);
  const std::string message = gradcomm_last_error();
  EXPECT_NE(message.find("learner 1"), std::string::npos) << message;
  EXPECT_NE(message.find("simulated learners"), std::string::npos) << message;
  rows[150] = 1.0f;

  gradcomm_scalecom_options options = plainOptions(10, 0.5f);
  ASSERT_EQ(gradcomm_learners_scalecom_recipe_f32(g.group, "s", rows.data(),
                                                  out.data(), 100, &options,
                                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_OK);
  // The same state with another size.
  EXPECT_EQ(gradcomm_learners_scalecom_recipe_f32(g.group, "s", rows.data(),
                                                  out.data(), 50, &options,
                                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_STATE);
  // A 16-bit wire.
  options.wire = GRADCOMM_WIRE_BF16;
  EXPECT_EQ(gradcomm_learners_scalecom_recipe_f32(g.group, "s", rows.data(),
                                                  out.data(), 100, &options,
                                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_UNSUPPORTED);
  // `out` inside the learners' rows.
  EXPECT_EQ(gradcomm_learners_dense_f32(g.group, "o", rows.data(),
                                        rows.data() + 100, 100,
                                        GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  std::vector<float> memory(100);
  EXPECT_EQ(gradcomm_learners_state_read(g.group, "s", 2, memory.data(), 100),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      gradcomm_learners_state_read(g.group, "missing", 0, memory.data(), 100),
      GRADCOMM_ERR_STATE);
  EXPECT_EQ(gradcomm_learners_dense_f32(nullptr, "d", rows.data(), out.data(),
                                        100, GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}
