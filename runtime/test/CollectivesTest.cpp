//===- CollectivesTest.cpp - Local top-k, gossip and counters -------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <numeric>
#include <set>

using namespace gradcomm::test;

namespace {

//===----------------------------------------------------------------------===//
// Local top-k + all-gather
//===----------------------------------------------------------------------===//

TEST(LocalTopk, MatchesReferenceAndReportsBuildUp) {
  World world;
  const int64_t count = 2000, k = 25;
  std::string name = uniqueName("w");
  std::vector<std::vector<float>> memory(world.size,
                                         std::vector<float>(count, 0.0f));
  for (uint64_t step = 0; step < 8; ++step) {
    // Reference: each rank's own top-k with error feedback, summed in rank
    // order over the all-gathered (rank-major) entries, then the mean.
    std::vector<float> expected(count, 0.0f);
    std::set<int64_t> unionSet;
    for (int r = 0; r < world.size; ++r) {
      std::vector<float> grad = gradient(20, r, step, count), p(count);
      for (int64_t i = 0; i < count; ++i)
        p[i] = memory[r][i] + grad[i];
      std::vector<int64_t> order(count);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return std::fabs(p[a]) > std::fabs(p[b]);
      });
      order.resize(k);
      std::sort(order.begin(), order.end());
      for (int64_t index : order) {
        expected[index] += p[index];
        unionSet.insert(index);
      }
      memory[r] = p;
      for (int64_t index : order)
        memory[r][index] = 0.0f;
    }
    for (int64_t index : unionSet)
      expected[index] /= static_cast<float>(world.size);

    std::vector<float> grad = gradient(20, world.rank, step, count), out(count);
    int64_t unionSize = -1;
    ASSERT_OK(gradcomm_local_topk_all_gather_f32(
        name.c_str(), grad.data(), out.data(), count, k,
        GRADCOMM_REDUCE_AVERAGE, &unionSize));
    EXPECT_EQ(out, expected) << "step " << step;
    EXPECT_EQ(unionSize, static_cast<int64_t>(unionSet.size()));
    EXPECT_GE(unionSize, k);
    EXPECT_LE(unionSize, k * world.size);
    std::vector<float> mem(count);
    ASSERT_OK(gradcomm_state_read(name.c_str(), mem.data(), count));
    EXPECT_EQ(mem, memory[world.rank]);
  }
  gradcomm_op_stats stats;
  ASSERT_OK(gradcomm_stats_get(name.c_str(), &stats));
  EXPECT_EQ(stats.calls, 8u);
  // Build-up: every rank receives (n - 1) k values and indices per call.
  EXPECT_EQ(stats.index_bytes_received,
            8u * (world.size - 1) * k * sizeof(int64_t));
  EXPECT_EQ(stats.value_bytes_received,
            8u * (world.size - 1) * k * sizeof(float));
}

// The started form: three tensors in flight together, waited for in
// reverse order, give the blocking form's bits and memories; a held state
// refuses another call and a checkpoint until the wait.
TEST(LocalTopk, StartedCallsMatchBlocking) {
  World world;
  const std::vector<int64_t> counts = {500, 3000, 64};
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<std::vector<float>> started(counts.size());
    std::vector<gradcomm_request> requests(counts.size(), nullptr);
    for (size_t t = 0; t < counts.size(); ++t) {
      std::vector<float> grad = gradient(50 + t, world.rank, step, counts[t]);
      started[t].assign(counts[t], 9.0f);
      ASSERT_OK(gradcomm_local_topk_all_gather_start_f32(
          uniqueName("started" + std::to_string(t)).c_str(), grad.data(),
          started[t].data(), counts[t], counts[t] / 10, GRADCOMM_REDUCE_AVERAGE,
          &requests[t]));
    }
    const std::string held = uniqueName("started0");
    std::vector<float> grad = gradient(50, world.rank, step, counts[0]),
                       other(counts[0]);
    EXPECT_EQ(gradcomm_local_topk_all_gather_f32(
                  held.c_str(), grad.data(), other.data(), counts[0],
                  counts[0] / 10, GRADCOMM_REDUCE_AVERAGE, nullptr),
              GRADCOMM_ERR_STATE);
    EXPECT_EQ(gradcomm_state_save("/nonexistent/never-written"),
              GRADCOMM_ERR_STATE);
    for (size_t t = counts.size(); t-- > 0;) {
      ASSERT_OK(gradcomm_wait(&requests[t]));
      std::vector<float> grad = gradient(50 + t, world.rank, step, counts[t]);
      std::vector<float> blocking(counts[t]);
      const std::string name = uniqueName("blocking" + std::to_string(t));
      ASSERT_OK(gradcomm_local_topk_all_gather_f32(
          name.c_str(), grad.data(), blocking.data(), counts[t], counts[t] / 10,
          GRADCOMM_REDUCE_AVERAGE, nullptr));
      EXPECT_EQ(started[t], blocking) << "tensor " << t << " step " << step;
    }
  }
  gradcomm_op_stats stats{};
  ASSERT_OK(gradcomm_stats_get(uniqueName("started1").c_str(), &stats));
  EXPECT_EQ(stats.calls, 3u);
}

TEST(LocalTopk, Errors) {
  std::vector<float> grad(10, 1.0f), out(10);
  EXPECT_EQ(gradcomm_local_topk_all_gather_f32("ltk", grad.data(), out.data(),
                                               10, 11, GRADCOMM_REDUCE_SUM,
                                               nullptr),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "'k' must be in [1, 10]"));
  EXPECT_EQ(gradcomm_local_topk_all_gather_f32("ltk", nullptr, out.data(), 10,
                                               1, GRADCOMM_REDUCE_SUM, nullptr),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Gossip
//===----------------------------------------------------------------------===//

double replicaMean(const std::vector<float> &x, int64_t i) {
  double value = x[i], sum = 0.0;
  MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return sum / size;
}

TEST(Gossip, ExchangesWithTheScheduledPeer) {
  World world;
  for (gradcomm_schedule schedule :
       {GRADCOMM_SCHEDULE_MATCHING, GRADCOMM_SCHEDULE_RING,
        GRADCOMM_SCHEDULE_HYPERCUBE}) {
    if (schedule == GRADCOMM_SCHEDULE_HYPERCUBE &&
        (world.size & (world.size - 1)) != 0)
      continue;
    std::string name = uniqueName("x") + std::to_string(schedule);
    for (uint64_t step = 0; step < 6; ++step) {
      // Small integers: the mixed values are exact.
      std::vector<float> x(16, static_cast<float>(world.rank * 2));
      int peer = -2;
      ASSERT_OK(gradcomm_gossip_peer(schedule, 5, step, world.rank, world.size,
                                     &peer));
      ASSERT_OK(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 16,
                                             schedule, 0.5f, 5, 1));
      float expected = peer < 0 ? world.rank * 2.0f
                                : (world.rank * 2.0f + peer * 2.0f) / 2.0f;
      EXPECT_EQ(x, std::vector<float>(16, expected))
          << "schedule " << schedule << " step " << step << " peer " << peer;
      // Symmetric: my peer's peer is me.
      std::vector<int> peers(world.size);
      MPI_Allgather(&peer, 1, MPI_INT, peers.data(), 1, MPI_INT,
                    MPI_COMM_WORLD);
      if (peer >= 0)
        EXPECT_EQ(peers[peer], world.rank);
      EXPECT_EQ(std::count(peers.begin(), peers.end(), -1), world.size % 2);
    }
  }
}

// The started form: four tensors' exchanges (one with period 2, so some
// steps do not exchange) in flight together, waited for in reverse order,
// give the blocking form's bits and counters. The blocking form exchanges
// in pipelined chunks of 256K floats, four in flight; the last tensor
// spans six chunks and a ragged seventh, the started form's one message
// is the reference.
TEST(Gossip, StartedExchangesMatchBlocking) {
  World world;
  const std::vector<int64_t> counts = {5, 1000, 33333, 6 * 262144 + 123};
  const std::vector<int64_t> periods = {1, 2, 1, 1};
  for (uint64_t step = 0; step < 4; ++step) {
    std::vector<std::vector<float>> started(counts.size());
    std::vector<gradcomm_request> requests(counts.size(), nullptr);
    for (size_t t = 0; t < counts.size(); ++t) {
      started[t] = gradient(30 + t, world.rank, step, counts[t]);
      ASSERT_OK(gradcomm_gossip_exchange_start_f32(
          uniqueName("started" + std::to_string(t)).c_str(), started[t].data(),
          counts[t], GRADCOMM_SCHEDULE_MATCHING, 0.25f, 9, periods[t],
          &requests[t]));
      ASSERT_NE(requests[t], nullptr);
    }
    for (size_t t = counts.size(); t-- > 0;) {
      ASSERT_OK(gradcomm_wait(&requests[t]));
      std::vector<float> blocking =
          gradient(30 + t, world.rank, step, counts[t]);
      ASSERT_OK(gradcomm_gossip_exchange_f32(
          uniqueName("blocking" + std::to_string(t)).c_str(), blocking.data(),
          counts[t], GRADCOMM_SCHEDULE_MATCHING, 0.25f, 9, periods[t]));
      EXPECT_EQ(started[t], blocking) << "tensor " << t << " step " << step;
    }
  }
  gradcomm_op_stats started{}, blocking{};
  ASSERT_OK(gradcomm_stats_get(uniqueName("started1").c_str(), &started));
  ASSERT_OK(gradcomm_stats_get(uniqueName("blocking1").c_str(), &blocking));
  EXPECT_EQ(started.calls, 4u);
  EXPECT_EQ(started.messages, blocking.messages);
  EXPECT_EQ(started.value_bytes_sent, blocking.value_bytes_sent);
}

TEST(Gossip, PreservesTheMeanOfReplicas) {
  World world;
  const int64_t count = 500;
  std::string name = uniqueName("x");
  std::vector<float> x = gradient(30, world.rank, 0, count);
  std::vector<double> before(count);
  for (int64_t i = 0; i < count; ++i)
    before[i] = replicaMean(x, i);
  for (int step = 0; step < 10; ++step)
    ASSERT_OK(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), count,
                                           GRADCOMM_SCHEDULE_MATCHING, 0.3f, 17,
                                           1));
  for (int64_t i = 0; i < count; ++i)
    EXPECT_NEAR(replicaMean(x, i), before[i], 1e-6);
}

TEST(Gossip, HypercubeReachesExactConsensusInLog2NSteps) {
  World world;
  if ((world.size & (world.size - 1)) != 0)
    GTEST_SKIP() << "power-of-two group only";
  std::string name = uniqueName("x");
  std::vector<float> x(32, static_cast<float>(world.rank));
  int rounds = 0;
  while ((1 << rounds) < world.size)
    ++rounds;
  for (int step = 0; step < rounds; ++step)
    ASSERT_OK(gradcomm_gossip_exchange_f32(
        name.c_str(), x.data(), 32, GRADCOMM_SCHEDULE_HYPERCUBE, 0.5f, 0, 1));
  EXPECT_TRUE(sameOnAllRanks(x));
  EXPECT_EQ(x[0], (world.size - 1) / 2.0f);
  double distance = -1.0;
  ASSERT_OK(gradcomm_consensus_distance_f32(x.data(), 32, &distance));
  EXPECT_EQ(distance, 0.0);
}

TEST(Gossip, PeriodSkipsStepsButAdvancesTheCounter) {
  World world;
  std::string name = uniqueName("x");
  std::vector<float> x(4, static_cast<float>(world.rank));
  // Step 0 exchanges, step 1 does not (period 2).
  ASSERT_OK(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 4,
                                         GRADCOMM_SCHEDULE_RING, 0.5f, 0, 2));
  std::vector<float> afterFirst = x;
  ASSERT_OK(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 4,
                                         GRADCOMM_SCHEDULE_RING, 0.5f, 0, 2));
  EXPECT_EQ(x, afterFirst);
  uint64_t step = 0;
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 2u);
}

TEST(Gossip, ConsensusDistance) {
  World world;
  std::vector<float> x(10, static_cast<float>(world.rank));
  double distance = -1.0;
  ASSERT_OK(gradcomm_consensus_distance_f32(x.data(), 10, &distance));
  double mean = (world.size - 1) / 2.0, expected = 0.0;
  for (int r = 0; r < world.size; ++r)
    expected += 10 * (r - mean) * (r - mean);
  EXPECT_NEAR(distance, expected / world.size, 1e-12);
}

TEST(Gossip, Errors) {
  World world;
  std::string name = uniqueName("x");
  std::vector<float> x(4, 1.0f);
  EXPECT_EQ(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 4,
                                         GRADCOMM_SCHEDULE_RING, 0.0f, 0, 1),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "'mixing' must be in (0, 1)"));
  EXPECT_EQ(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 4,
                                         GRADCOMM_SCHEDULE_RING, 1.0f, 0, 1),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 4,
                                         GRADCOMM_SCHEDULE_RING, 0.5f, 0, 0),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "'period' must be in [1, "));
  EXPECT_EQ(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 4,
                                         static_cast<gradcomm_schedule>(7),
                                         0.5f, 0, 1),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "unknown schedule 7"));
  if ((world.size & (world.size - 1)) != 0) {
    EXPECT_EQ(gradcomm_gossip_exchange_f32(name.c_str(), x.data(), 4,
                                           GRADCOMM_SCHEDULE_HYPERCUBE, 0.5f, 0,
                                           1),
              GRADCOMM_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(gradcomm_last_error(),
                         "needs a power-of-two number of ranks, got " +
                             std::to_string(world.size)));
  }
  // A state with a memory is not a gossip counter.
  std::string withMemory = uniqueName("m");
  ASSERT_OK(gradcomm_state_declare(withMemory.c_str(), 8));
  EXPECT_EQ(gradcomm_gossip_exchange_f32(withMemory.c_str(), x.data(), 4,
                                         GRADCOMM_SCHEDULE_RING, 0.5f, 0, 1),
            GRADCOMM_ERR_STATE);
  int peer = 0;
  EXPECT_EQ(gradcomm_gossip_peer(GRADCOMM_SCHEDULE_RING, 0, 0, 5, 4, &peer),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Counters
//===----------------------------------------------------------------------===//

TEST(Stats, ScaleComBytesFollowTheCostModel) {
  World world;
  std::string name = uniqueName("w");
  const int64_t count = 4000, k = 40;
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<float> grad = gradient(40, world.rank, step, count), out(count);
    ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(),
                                    count, k, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                    GRADCOMM_REDUCE_AVERAGE));
  }
  gradcomm_op_stats stats;
  ASSERT_OK(gradcomm_stats_get(name.c_str(), &stats));
  const uint64_t n = world.size;
  EXPECT_EQ(stats.calls, 3u);
  // 40 indices as 16-bit gaps (80 bytes; no gap of 65535 fits in 4000
  // elements) fit in the agreement's payload: no broadcast of their own,
  // one message (the values) per call.
  EXPECT_EQ(stats.messages, 3u);
  // k indices shared by the leader: (n - 1) / n of 2k bytes, folded or
  // not; k values all-reduced: 2 (n - 1) / n of 4k bytes.
  EXPECT_EQ(stats.index_bytes_sent, 3 * (2 * k * (n - 1) / n));
  EXPECT_EQ(stats.index_bytes_received, 3 * (2 * k * (n - 1) / n));
  EXPECT_EQ(stats.value_bytes_sent, 3 * (2 * 4 * k * (n - 1) / n));
  EXPECT_GE(stats.seconds, 0.0);

  // 200 indices (400 bytes) do not fit: a broadcast and an all-reduce.
  const std::string larger = name + "_k200";
  std::vector<float> grad = gradient(42, world.rank, 0, count), out(count);
  ASSERT_OK(gradcomm_scalecom_f32(larger.c_str(), grad.data(), out.data(),
                                  count, 200, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE));
  gradcomm_op_stats largerStats;
  ASSERT_OK(gradcomm_stats_get(larger.c_str(), &largerStats));
  EXPECT_EQ(largerStats.messages, 2u);
  EXPECT_EQ(largerStats.index_bytes_sent, 2 * 200 * (n - 1) / n);

  // A tensor of 2^17 elements has room for one escaped gap (two words
  // more); one index alone travels as an int32, which is smaller.
  for (int64_t kBig : {int64_t(1), int64_t(1000)}) {
    const int64_t big = int64_t(1) << 17;
    const std::string wide = name + "_big" + std::to_string(kBig);
    std::vector<float> g = gradient(43, world.rank, 0, big), o(big);
    ASSERT_OK(gradcomm_scalecom_f32(wide.c_str(), g.data(), o.data(), big, kBig,
                                    GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                    GRADCOMM_REDUCE_AVERAGE));
    gradcomm_op_stats wideStats;
    ASSERT_OK(gradcomm_stats_get(wide.c_str(), &wideStats));
    const uint64_t message = kBig == 1 ? 4 : 2 * (kBig + 2);
    EXPECT_EQ(wideStats.index_bytes_sent, message * (n - 1) / n) << kBig;
  }

  // Chunk selection sends each index's offset inside its chunk: 1 byte for
  // chunks of 100, 2 bytes for chunks of 1000.
  for (int64_t chunk : {100, 1000}) {
    const std::string chunked = name + "_chunk" + std::to_string(chunk);
    const int64_t chunks = (count + chunk - 1) / chunk;
    std::vector<float> grad = gradient(41, world.rank, 0, count), out(count);
    ASSERT_OK(gradcomm_scalecom_f32(chunked.c_str(), grad.data(), out.data(),
                                    count, chunks, GRADCOMM_SELECT_CHUNK, chunk,
                                    1.0f, GRADCOMM_REDUCE_AVERAGE));
    gradcomm_op_stats chunkStats;
    ASSERT_OK(gradcomm_stats_get(chunked.c_str(), &chunkStats));
    const uint64_t width = chunk <= 256 ? 1 : 2;
    EXPECT_EQ(chunkStats.index_bytes_sent, width * chunks * (n - 1) / n)
        << "chunk " << chunk;
  }

  std::string path = ::testing::TempDir() + "gradcomm_stats_np" +
                     std::to_string(world.size) + ".json";
  ASSERT_OK(gradcomm_stats_dump(path.c_str()));
  if (world.rank == 0) {
    std::ifstream file(path);
    std::string json((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
    EXPECT_TRUE(contains(json, "\"" + name + "\": {\"calls\": 3"));
    EXPECT_TRUE(contains(json, "\"rank\": " + std::to_string(world.size - 1)));
    EXPECT_TRUE(contains(json, "\"index_bytes_sent\": " +
                                   std::to_string(2 * k * (n - 1) / n * 3)));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world.rank == 0)
    std::remove(path.c_str());
  ASSERT_OK(gradcomm_stats_reset());
  ASSERT_OK(gradcomm_stats_get(name.c_str(), &stats));
  EXPECT_EQ(stats.calls, 0u);
  EXPECT_EQ(gradcomm_stats_dump("/nonexistent-dir/x.json"), GRADCOMM_ERR_IO);
}

} // namespace
