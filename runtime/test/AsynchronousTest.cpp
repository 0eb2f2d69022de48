//===- AsynchronousTest.cpp - Asynchronous gossip and EASGD ---------------===//
//
// Part of the GradComm project.
//
// What must hold whatever the timing (docs/gossip.md): every run ends (no
// deadlock) under seeded random delays, a copy is never mixed twice, the
// elastic updates are never lost (sum of replicas + center is conserved),
// a failure on one rank reaches every rank, and both methods solve a
// convex problem (each rank pulls toward its own target; the optimum is
// their mean).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

using namespace gradcomm::test;

namespace {

/// Sleeps 0-`maxMicros` us, drawn from (seed, rank, step).
void randomDelay(uint64_t seed, int rank, int step, int maxMicros) {
  std::mt19937_64 rng(seed * 1000003 + rank * 7919 + step);
  usleep(static_cast<useconds_t>(rng() % (maxMicros + 1)));
}

/// Rank r's target: the optimum of sum_r 0.5 ||x - a_r||^2 is their mean.
std::vector<float> target(int rank, int64_t count) {
  return gradient(50, rank, 0, count);
}

double distance(const std::vector<float> &x, const std::vector<double> &y) {
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i)
    sum += (x[i] - y[i]) * (x[i] - y[i]);
  return std::sqrt(sum);
}

std::vector<double> meanOfTargets(int size, int64_t count) {
  std::vector<double> mean(count, 0.0);
  for (int r = 0; r < size; ++r) {
    std::vector<float> a = target(r, count);
    for (int64_t i = 0; i < count; ++i)
      mean[i] += a[i] / size;
  }
  return mean;
}

/// Local step toward this rank's target, then `exchange`, `steps` times
/// with random delays; returns the distance to the optimum of this rank's
/// own target (where it would end alone) and of its replica at the end.
template <typename Exchange>
std::pair<double, double> solveConvex(uint64_t seed, int steps,
                                      Exchange &&exchange) {
  World world;
  const int64_t count = 200;
  std::vector<float> a = target(world.rank, count), x(count, 0.0f);
  std::vector<double> optimum = meanOfTargets(world.size, count);
  double alone = distance(a, optimum);
  for (int step = 0; step < steps; ++step) {
    for (int64_t i = 0; i < count; ++i)
      x[i] = x[i] - 0.02f * (x[i] - a[i]);
    randomDelay(seed, world.rank, step, 300);
    if (exchange(x) != GRADCOMM_OK)
      return {alone, -1.0};
    // Ranks drift apart by up to 5 steps (bounded staleness, as workers
    // that meet at epoch ends; a rank far ahead could only pull toward its
    // own target, which no method can prevent).
    if (step % 5 == 4)
      MPI_Barrier(MPI_COMM_WORLD);
  }
  return {alone, distance(x, optimum)};
}

TEST(AsyncGossip, SolvesAConvexProblemUnderRandomDelays) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  for (uint64_t seed : {1, 2}) {
    const std::string name = uniqueName("g") + std::to_string(seed);
    auto [alone, after] = solveConvex(seed, 200, [&](std::vector<float> &x) {
      return gradcomm_gossip_async_f32(name.c_str(), x.data(), x.size(),
                                       GRADCOMM_SCHEDULE_RANDOM, 0.5f, seed, 1);
    });
    ASSERT_GE(after, 0.0) << gradcomm_last_error();
    // Every replica ends near the consensus optimum, far nearer than where
    // it would end alone.
    EXPECT_LT(after, 0.25 * alone) << "seed " << seed;
    uint64_t histogram[GRADCOMM_STALENESS_BINS], torn = 1;
    ASSERT_OK(gradcomm_stats_staleness(name.c_str(), histogram, &torn));
    uint64_t mixed = 0;
    for (uint64_t bin : histogram)
      mixed += bin;
    EXPECT_GT(mixed, 0u);
    EXPECT_LE(mixed, 200u);
    EXPECT_EQ(torn, 0u);
    gradcomm_op_stats stats;
    ASSERT_OK(gradcomm_stats_get(name.c_str(), &stats));
    EXPECT_EQ(stats.calls, 200u);
    EXPECT_EQ(stats.messages, 200u); // one push per call
  }
}

TEST(AsyncGossip, NeverMixesACopyTwice) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  const std::string name = uniqueName("g");
  const int64_t count = 16;
  std::vector<float> x(count, static_cast<float>(world.rank));
  // Everyone pushes once; afterwards only rank 1 calls.
  ASSERT_OK(gradcomm_gossip_async_f32(name.c_str(), x.data(), count,
                                      GRADCOMM_SCHEDULE_RANDOM, 0.5f, 0, 1));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world.rank == 1) {
    // Mixes whatever is still new in its mailbox, then nothing more.
    ASSERT_OK(gradcomm_gossip_async_f32(name.c_str(), x.data(), count,
                                        GRADCOMM_SCHEDULE_RANDOM, 0.5f, 0, 1));
    std::vector<float> settled = x;
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK(gradcomm_gossip_async_f32(
          name.c_str(), x.data(), count, GRADCOMM_SCHEDULE_RANDOM, 0.5f, 0, 1));
      EXPECT_EQ(x, settled) << "call " << i;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/// A copy whose sequence numbers disagree (torn: overwritten while it was
/// read) is counted and never mixed. The exclusive locks make a real torn
/// copy impossible here, so the pushes are torn on purpose
/// (GRADCOMM_FAULT_TEAR_MAIL).
TEST(AsyncGossip, RefusesATornCopy) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  const std::string name = uniqueName("torn");
  const int64_t count = 16;
  std::vector<float> x(count, static_cast<float>(world.rank));
  const std::vector<float> before = x;
  // Each call is followed by a barrier, so a push has landed before the
  // next call's read. With the ring schedule every rank receives at least
  // every other step (odd n: the rank without a partner sits out).
  auto exchange = [&](int calls) {
    for (int call = 0; call < calls; ++call) {
      ASSERT_OK(gradcomm_gossip_async_f32(name.c_str(), x.data(), count,
                                          GRADCOMM_SCHEDULE_RING, 0.5f, 0, 1));
      MPI_Barrier(MPI_COMM_WORLD);
    }
  };
  ASSERT_EQ(setenv("GRADCOMM_FAULT_TEAR_MAIL", "1", 1), 0);
  exchange(4);
  ASSERT_EQ(unsetenv("GRADCOMM_FAULT_TEAR_MAIL"), 0);
  uint64_t histogram[GRADCOMM_STALENESS_BINS] = {}, torn = 0;
  ASSERT_OK(gradcomm_stats_staleness(name.c_str(), histogram, &torn));
  EXPECT_EQ(x, before) << "a torn copy was mixed";
  // Calls 2 and 3 at least find a torn copy that landed before them.
  EXPECT_GE(torn, 2u);
  for (uint64_t mixed : histogram)
    EXPECT_EQ(mixed, 0u);
  // Whole copies are mixed again once the pushes are whole (counted: the
  // mixed values can come back to where they started).
  exchange(3);
  uint64_t tornAfter = 0, mixed = 0;
  ASSERT_OK(gradcomm_stats_staleness(name.c_str(), histogram, &tornAfter));
  for (uint64_t copies : histogram)
    mixed += copies;
  // (The first of these calls may still find the last torn copy.)
  EXPECT_GE(mixed, 1u);
  EXPECT_GE(tornAfter, torn);
}

TEST(AsyncGossip, AFailureReachesEveryRank) {
  World world;
  const std::string name = uniqueName("g");
  const int64_t count = 8;
  std::vector<float> x(count, 1.0f);
  EXPECT_OK(gradcomm_gossip_async_f32(name.c_str(), x.data(), count,
                                      GRADCOMM_SCHEDULE_RING, 0.5f, 0, 1));
  // Every rank past its first call before the failure (else a slow rank's
  // first call would already report it).
  MPI_Barrier(MPI_COMM_WORLD);
  const int failing = world.size - 1;
  if (world.rank == failing) {
    x[3] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(gradcomm_gossip_async_f32(name.c_str(), x.data(), count,
                                        GRADCOMM_SCHEDULE_RING, 0.5f, 0, 1),
              GRADCOMM_ERR_NON_FINITE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world.rank != failing) {
    EXPECT_EQ(gradcomm_gossip_async_f32(name.c_str(), x.data(), count,
                                        GRADCOMM_SCHEDULE_RING, 0.5f, 0, 1),
              GRADCOMM_ERR_NON_FINITE);
  }
  std::string message = gradcomm_last_error();
  EXPECT_TRUE(contains(message,
                       "non-finite replica on rank " + std::to_string(failing)))
      << message;
  std::vector<float> bytes(message.begin(), message.end());
  EXPECT_TRUE(sameOnAllRanks(bytes)) << message;
}

TEST(AsyncGossip, SynchronousGossipRefusesTheRandomSchedule) {
  std::vector<float> x(4, 1.0f);
  EXPECT_EQ(gradcomm_gossip_exchange_f32(uniqueName("g").c_str(), x.data(), 4,
                                         GRADCOMM_SCHEDULE_RANDOM, 0.5f, 0, 1),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "not a pairing"))
      << gradcomm_last_error();
}

/// The asynchronous EASGD tests run with the center on rank 0 and sharded.
using ElasticAverageFn = gradcomm_status (*)(const char *, float *, int64_t,
                                             float, int64_t);
class AsyncElasticAverage : public ::testing::TestWithParam<bool> {
protected:
  static gradcomm_status average(const char *state, float *x, int64_t count,
                                 float alpha, int64_t period) {
    ElasticAverageFn fn = GetParam() ? gradcomm_elastic_average_sharded_f32
                                     : gradcomm_elastic_average_async_f32;
    return fn(state, x, count, alpha, period);
  }
};

TEST_P(AsyncElasticAverage, NoUpdateIsLostUnderRandomDelays) {
  World world;
  const int64_t count = 300;
  for (uint64_t seed : {4, 5}) {
    const std::string name = uniqueName("e") + std::to_string(seed);
    const float alpha = 0.5f / static_cast<float>(world.size);
    std::vector<float> x = gradient(51, world.rank, seed, count);
    // The first call sets the center to the replicas' mean, so
    // sum_i x_i + c starts at (n + 1) times that mean; each exchange moves
    // e from a replica to the center and keeps it; only the drift each
    // rank adds to its replica changes it.
    std::vector<double> expected(x.begin(), x.end());
    MPI_Allreduce(MPI_IN_PLACE, expected.data(), count, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    for (double &v : expected)
      v = v * (world.size + 1) / world.size;
    std::vector<double> drift(count, 0.0);
    for (int step = 0; step < 60; ++step) {
      randomDelay(seed, world.rank, step, 500);
      if (step > 0) {
        std::vector<float> g = gradient(52, world.rank, step, count);
        for (int64_t i = 0; i < count; ++i) {
          x[i] = x[i] + 0.01f * g[i];
          drift[i] += 0.01f * g[i];
        }
      }
      ASSERT_OK(average(name.c_str(), x.data(), count, alpha, 1));
    }
    MPI_Barrier(MPI_COMM_WORLD); // every accumulate has completed
    std::vector<double> replicas(x.begin(), x.end());
    MPI_Allreduce(MPI_IN_PLACE, replicas.data(), count, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, drift.data(), count, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    std::vector<float> center(count);
    ASSERT_OK(gradcomm_state_read(name.c_str(), center.data(), count));
    EXPECT_TRUE(sameOnAllRanks(center));
    double worst = 0;
    for (int64_t i = 0; i < count; ++i)
      worst = std::max(
          worst, std::fabs(replicas[i] + center[i] - (expected[i] + drift[i])));
    EXPECT_LT(worst, 1e-3) << "seed " << seed;
  }
}

TEST_P(AsyncElasticAverage, SolvesAConvexProblemUnderRandomDelays) {
  World world;
  const std::string name = uniqueName("e");
  const float alpha = 0.9f / static_cast<float>(world.size);
  auto [alone, after] = solveConvex(6, 200, [&](std::vector<float> &x) {
    return average(name.c_str(), x.data(), x.size(), alpha, 1);
  });
  ASSERT_GE(after, 0.0) << gradcomm_last_error();
  if (world.size > 1)
    EXPECT_LT(after, 0.25 * alone);
}

TEST_P(AsyncElasticAverage, CheckpointKeepsTheCenter) {
  World world;
  const int64_t count = 32;
  const float alpha = 0.5f / static_cast<float>(world.size);
  std::vector<float> x = gradient(53, world.rank, 0, count);
  ASSERT_OK(gradcomm_finalize());
  for (int step = 0; step < 5; ++step)
    ASSERT_OK(average("center", x.data(), count, alpha, 1));
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string path = ::testing::TempDir() + "gradcomm_async_easgd_" +
                           std::to_string(world.rank);
  std::vector<float> saved(count), restored(count);
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  ASSERT_OK(gradcomm_state_read("center", saved.data(), count));
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_state_restore(path.c_str()));
  // The restored center seeds the window (not the replicas' mean).
  ASSERT_OK(average("center", x.data(), count, alpha, 2));
  MPI_Barrier(MPI_COMM_WORLD);
  ASSERT_OK(gradcomm_state_read("center", restored.data(), count));
  // Step 5 is not an exchange step with period 2 (5 % 2 == 1).
  EXPECT_EQ(restored, saved);
  std::remove(path.c_str());
  ASSERT_OK(gradcomm_finalize());
}

INSTANTIATE_TEST_SUITE_P(Placement, AsyncElasticAverage, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "Sharded" : "Rank0";
                         });

/// The same exchanges, taken one rank at a time in rank order, give the
/// same bits whether the center is on rank 0 or sharded; sizes below,
/// at and above the group size (some ranks then hold no shard).
TEST(ShardedElasticAverage, SerializedExchangesMatchTheRank0Center) {
  World world;
  for (int64_t count : {int64_t{1}, int64_t{world.size}, int64_t{1001}}) {
    const float alpha = 0.7f / static_cast<float>(world.size);
    std::vector<std::vector<float>> replicas, centers;
    for (bool sharded : {false, true}) {
      const std::string name =
          uniqueName(sharded ? "sharded" : "rank0") + std::to_string(count);
      ElasticAverageFn fn = sharded ? gradcomm_elastic_average_sharded_f32
                                    : gradcomm_elastic_average_async_f32;
      // The first call is collective (it makes the windows): from equal
      // replicas, so its exchange moves nothing and its order cannot show.
      std::vector<float> x = gradient(54, 0, 0, count);
      ASSERT_OK(fn(name.c_str(), x.data(), count, alpha, 1));
      MPI_Barrier(MPI_COMM_WORLD);
      for (int step = 1; step < 5; ++step) {
        std::vector<float> g = gradient(55, world.rank, step, count);
        for (int64_t i = 0; i < count; ++i)
          x[i] -= 0.05f * g[i];
        for (int turn = 0; turn < world.size; ++turn) {
          if (turn == world.rank)
            ASSERT_OK(fn(name.c_str(), x.data(), count, alpha, 1));
          MPI_Barrier(MPI_COMM_WORLD);
        }
      }
      std::vector<float> center(count);
      ASSERT_OK(gradcomm_state_read(name.c_str(), center.data(), count));
      replicas.push_back(x);
      centers.push_back(center);
    }
    EXPECT_EQ(replicas[0], replicas[1]) << "count " << count;
    EXPECT_EQ(centers[0], centers[1]) << "count " << count;
    EXPECT_TRUE(sameOnAllRanks(centers[1])) << "count " << count;
  }
}

TEST(ShardedElasticAverage, AStateKeepsItsPlacement) {
  World world;
  const std::string name = uniqueName("placement");
  std::vector<float> x(8, 1.0f);
  ASSERT_OK(gradcomm_elastic_average_async_f32(name.c_str(), x.data(), 8,
                                               0.5f / world.size, 1));
  EXPECT_EQ(gradcomm_elastic_average_sharded_f32(name.c_str(), x.data(), 8,
                                                 0.5f / world.size, 1),
            GRADCOMM_ERR_STATE);
  EXPECT_TRUE(contains(gradcomm_last_error(), "another center placement"))
      << gradcomm_last_error();
}

} // namespace
