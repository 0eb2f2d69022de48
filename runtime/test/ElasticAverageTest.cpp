//===- ElasticAverageTest.cpp - Synchronous EASGD against a reference -----===//
//
// Part of the GradComm project.
//
// Every rank can compute every rank's gradient (TestUtil.h), so the
// reference simulates all n workers (local SGD step, then the elastic
// exchange of docs/gossip.md) and this rank's replica and center are
// compared with it: bit for bit at n <= 2, where any summation order gives
// the same sum; to float tolerance at n >= 3 (MPI may sum the differences
// in another order than the reference), with the center bit-identical on
// every rank.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cmath>
#include <cstdio>

using namespace gradcomm::test;

namespace {

constexpr float kLearningRate = 0.05f;

/// n workers: x_i -= lr g_i, then the elastic exchange every `period`
/// steps (the first step sets the center to the mean).
struct Reference {
  int n;
  int64_t count;
  float alpha;
  int64_t period;
  std::vector<std::vector<float>> x;
  std::vector<float> center;
  uint64_t step = 0;

  Reference(int n, int64_t count, float alpha, int64_t period)
      : n(n), count(count), alpha(alpha), period(period),
        x(n, gradient(40, 0, 0, count)), center(count, 0.0f) {}

  void run() {
    for (int r = 0; r < n; ++r) {
      std::vector<float> g = gradient(41, r, step, count);
      for (int64_t i = 0; i < count; ++i)
        x[r][i] = x[r][i] - kLearningRate * g[i];
    }
    if (step == 0) {
      for (int64_t i = 0; i < count; ++i) {
        float sum = 0.0f;
        for (int r = 0; r < n; ++r)
          sum += x[r][i];
        center[i] = sum / static_cast<float>(n);
      }
    }
    if (step % period == 0) {
      for (int64_t i = 0; i < count; ++i) {
        float sum = 0.0f;
        std::vector<float> d(n);
        for (int r = 0; r < n; ++r) {
          d[r] = x[r][i] - center[i];
          sum += d[r];
        }
        for (int r = 0; r < n; ++r)
          x[r][i] = x[r][i] - alpha * d[r];
        center[i] = center[i] + alpha * sum;
      }
    }
    ++step;
  }
};

/// This rank's local step, as the reference takes it.
void localStep(std::vector<float> &x, uint64_t step, int rank) {
  std::vector<float> g = gradient(41, rank, step, x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = x[i] - kLearningRate * g[i];
}

void expectClose(const std::vector<float> &got,
                 const std::vector<float> &expected, bool exact,
                 const char *what, uint64_t step) {
  if (exact) {
    EXPECT_EQ(got, expected) << what << " at step " << step;
    return;
  }
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], 1e-5f * (1.0f + std::fabs(expected[i])))
        << what << "[" << i << "] at step " << step;
}

TEST(ElasticAverage, MatchesReferenceAndKeepsCentersIdentical) {
  World world;
  const int64_t count = 3000;
  for (int64_t period : {1, 3}) {
    const float alpha = 0.9f / static_cast<float>(world.size);
    const std::string name = uniqueName("c") + std::to_string(period);
    Reference reference(world.size, count, alpha, period);
    std::vector<float> x = gradient(40, 0, 0, count);
    for (uint64_t step = 0; step < 12; ++step) {
      localStep(x, step, world.rank);
      ASSERT_OK(gradcomm_elastic_average_f32(name.c_str(), x.data(), count,
                                             alpha, period));
      reference.run();
      std::vector<float> center(count);
      ASSERT_OK(gradcomm_state_read(name.c_str(), center.data(), count));
      const bool exact = world.size <= 2;
      expectClose(x, reference.x[world.rank], exact, "replica", step);
      expectClose(center, reference.center, exact, "center", step);
      EXPECT_TRUE(sameOnAllRanks(center)) << "step " << step;
    }
  }
}

/// The exchange moves mass between the replicas and the center but keeps
/// sum_i x_i + c; repeated alone it reaches consensus.
TEST(ElasticAverage, ConservesMassAndReachesConsensus) {
  World world;
  const int64_t count = 256;
  const std::string name = uniqueName("c");
  std::vector<float> x = gradient(42, world.rank, 0, count);
  auto massAndDistance = [&](double *mass, double *distance) {
    std::vector<float> center(count);
    ASSERT_OK(gradcomm_state_read(name.c_str(), center.data(), count));
    double local = 0.0;
    for (float v : x)
      local += v;
    MPI_Allreduce(&local, mass, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (float v : center)
      *mass += v;
    ASSERT_OK(gradcomm_consensus_distance_f32(x.data(), count, distance));
  };
  const float alpha = 0.9f / static_cast<float>(world.size);
  ASSERT_OK(
      gradcomm_elastic_average_f32(name.c_str(), x.data(), count, alpha, 1));
  double mass0 = 0, distance0 = 0;
  massAndDistance(&mass0, &distance0);
  for (int step = 1; step < 60; ++step)
    ASSERT_OK(
        gradcomm_elastic_average_f32(name.c_str(), x.data(), count, alpha, 1));
  double mass = 0, distance = 0;
  massAndDistance(&mass, &distance);
  EXPECT_NEAR(mass, mass0, 1e-3 * (1.0 + std::fabs(mass0)));
  if (world.size > 1)
    EXPECT_LT(distance, 1e-6 * distance0 + 1e-12)
        << "from " << distance0 << " to " << distance;
}

TEST(ElasticAverage, PeriodSkipsStepsButAdvancesTheCounter) {
  World world;
  const int64_t count = 64;
  const std::string name = uniqueName("c");
  std::vector<float> x = gradient(43, world.rank, 0, count);
  const float alpha = 0.5f / static_cast<float>(world.size);
  ASSERT_OK(
      gradcomm_elastic_average_f32(name.c_str(), x.data(), count, alpha, 4));
  for (int step = 1; step < 4; ++step) {
    std::vector<float> before = x;
    ASSERT_OK(
        gradcomm_elastic_average_f32(name.c_str(), x.data(), count, alpha, 4));
    EXPECT_EQ(x, before) << "step " << step;
  }
  gradcomm_op_stats stats;
  ASSERT_OK(gradcomm_stats_get(name.c_str(), &stats));
  EXPECT_EQ(stats.calls, 4u);
  // The first call: the center's initial mean and one exchange.
  EXPECT_EQ(stats.messages, 2u);
}

TEST(ElasticAverage, CheckpointResumesBitForBit) {
  World world;
  const int64_t count = 500;
  const float alpha = 0.9f / static_cast<float>(world.size);
  auto run = [&](const std::string &name, std::vector<float> &x, uint64_t first,
                 uint64_t last) {
    for (uint64_t step = first; step < last; ++step) {
      localStep(x, step, world.rank);
      ASSERT_OK(gradcomm_elastic_average_f32(name.c_str(), x.data(), count,
                                             alpha, 2));
    }
  };
  std::vector<float> straight = gradient(40, 0, 0, count);
  ASSERT_OK(gradcomm_finalize());
  run("center", straight, 0, 10);
  ASSERT_OK(gradcomm_finalize());
  std::vector<float> resumed = gradient(40, 0, 0, count);
  run("center", resumed, 0, 5);
  const std::string path =
      ::testing::TempDir() + "gradcomm_easgd_" + std::to_string(world.rank);
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_state_restore(path.c_str()));
  run("center", resumed, 5, 10);
  EXPECT_EQ(resumed, straight);
  std::remove(path.c_str());
  ASSERT_OK(gradcomm_finalize());
}

// The started form: three centers' exchanges (one with period 2, so some
// calls do not exchange) in flight together, waited for in reverse order,
// give the blocking form's replicas, centers and counters bit for bit.
TEST(ElasticAverage, StartedExchangesMatchBlocking) {
  World world;
  const std::vector<int64_t> counts = {7, 1000, 33333};
  const std::vector<int64_t> periods = {1, 2, 1};
  const float alpha = 0.5f / static_cast<float>(world.size);
  std::vector<std::vector<float>> started(counts.size()), blocking;
  for (size_t t = 0; t < counts.size(); ++t)
    started[t] = gradient(44 + t, world.rank, 0, counts[t]);
  blocking = started;
  auto name = [](const char *form, size_t t) {
    return uniqueName(form + std::to_string(t));
  };
  for (uint64_t step = 0; step < 4; ++step) {
    std::vector<gradcomm_request> requests(counts.size(), nullptr);
    for (size_t t = 0; t < counts.size(); ++t) {
      localStep(started[t], step, world.rank);
      ASSERT_OK(gradcomm_elastic_average_start_f32(
          name("started", t).c_str(), started[t].data(), counts[t], alpha,
          periods[t], &requests[t]));
      ASSERT_NE(requests[t], nullptr);
    }
    // A state whose exchange is in flight refuses another call (on every
    // rank, and without advancing its counter).
    if (step == 0)
      EXPECT_EQ(gradcomm_elastic_average_f32(name("started", 1).c_str(),
                                             started[1].data(), counts[1],
                                             alpha, periods[1]),
                GRADCOMM_ERR_STATE);
    for (size_t t = counts.size(); t-- > 0;) {
      ASSERT_OK(gradcomm_wait(&requests[t]));
      localStep(blocking[t], step, world.rank);
      ASSERT_OK(gradcomm_elastic_average_f32(name("blocking", t).c_str(),
                                             blocking[t].data(), counts[t],
                                             alpha, periods[t]));
      EXPECT_EQ(started[t], blocking[t]) << "tensor " << t << " step " << step;
    }
  }
  for (size_t t = 0; t < counts.size(); ++t) {
    std::vector<float> centerStarted(counts[t]), centerBlocking(counts[t]);
    ASSERT_OK(gradcomm_state_read(name("started", t).c_str(),
                                  centerStarted.data(), counts[t]));
    ASSERT_OK(gradcomm_state_read(name("blocking", t).c_str(),
                                  centerBlocking.data(), counts[t]));
    EXPECT_EQ(centerStarted, centerBlocking) << "tensor " << t;
    gradcomm_op_stats a{}, b{};
    ASSERT_OK(gradcomm_stats_get(name("started", t).c_str(), &a));
    ASSERT_OK(gradcomm_stats_get(name("blocking", t).c_str(), &b));
    EXPECT_EQ(a.calls, b.calls) << "tensor " << t;
    EXPECT_EQ(a.messages, b.messages) << "tensor " << t;
    EXPECT_EQ(a.value_bytes_sent, b.value_bytes_sent) << "tensor " << t;
  }
}

TEST(ElasticAverage, Errors) {
  World world;
  std::vector<float> x(8, 1.0f);
  const std::string name = uniqueName("c");
  // n alpha > 1: the center would overshoot the replicas' mean.
  const float tooLarge = 1.5f / static_cast<float>(world.size);
  EXPECT_EQ(
      gradcomm_elastic_average_f32(name.c_str(), x.data(), 8, tooLarge, 1),
      GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "'alpha' must be in (0, 1/n]"))
      << gradcomm_last_error();
  EXPECT_EQ(gradcomm_elastic_average_f32(name.c_str(), x.data(), 8, 0.1f, 0),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(gradcomm_elastic_average_f32(name.c_str(), nullptr, 8, 0.1f, 1),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  // A state of another size.
  const float alpha = 0.5f / static_cast<float>(world.size);
  ASSERT_OK(gradcomm_elastic_average_f32(name.c_str(), x.data(), 8, alpha, 1));
  EXPECT_EQ(gradcomm_elastic_average_f32(name.c_str(), x.data(), 4, alpha, 1),
            GRADCOMM_ERR_STATE);
}

} // namespace
