//===- WireTest.cpp - Values travelling in 16 bits ------------------------===//
//
// Part of the GradComm project.
//
// gradcomm_dense_all_reduce_wire_f32 and the recipe's `wire`: sums of
// small integers stay exact in 16 bits; a value 16 bits cannot hold is
// rounded before it travels (so a call that ignored the wire would give
// another result); binary16 overflow is non-finite; the counters see half
// the value bytes; started forms give the blocking bits; unknown wires are
// refused.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "gradcomm/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

using gradcomm::test::World;

constexpr gradcomm_wire kSixteenBits[] = {GRADCOMM_WIRE_BF16,
                                          GRADCOMM_WIRE_F16};

/// 1 plus half the wire type's last place: rounds to 1 (ties to even).
float justAboveOne(gradcomm_wire wire) {
  return wire == GRADCOMM_WIRE_BF16 ? 1.0f + std::ldexp(1.0f, -8)
                                    : 1.0f + std::ldexp(1.0f, -11);
}

TEST(Wire, SmallIntegersSumExactly) {
  World world;
  for (gradcomm_wire wire : kSixteenBits) {
    const int64_t count = 1000;
    std::vector<float> data(count), expected(count, 0.0f);
    for (int64_t i = 0; i < count; ++i) {
      data[i] = static_cast<float>((world.rank + 1) * (i % 9 - 4));
      for (int r = 0; r < world.size; ++r)
        expected[i] += static_cast<float>((r + 1) * (i % 9 - 4));
    }
    ASSERT_EQ(gradcomm_dense_all_reduce_wire_f32(
                  "wire.ints", data.data(), count, wire, GRADCOMM_REDUCE_SUM),
              GRADCOMM_OK)
        << gradcomm_last_error();
    EXPECT_EQ(data, expected) << "wire " << wire;
  }
}

TEST(Wire, ValuesAreRoundedBeforeTheyTravel) {
  World world;
  for (gradcomm_wire wire : kSixteenBits) {
    std::vector<float> data(64, justAboveOne(wire));
    ASSERT_EQ(gradcomm_dense_all_reduce_wire_f32("wire.round", data.data(), 64,
                                                 wire, GRADCOMM_REDUCE_AVERAGE),
              GRADCOMM_OK)
        << gradcomm_last_error();
    for (float value : data)
      ASSERT_EQ(value, 1.0f) << "wire " << wire;
  }
  // The float32 wire keeps it.
  std::vector<float> data(64, justAboveOne(GRADCOMM_WIRE_BF16));
  ASSERT_EQ(gradcomm_dense_all_reduce_wire_f32("wire.round32", data.data(), 64,
                                               GRADCOMM_WIRE_F32,
                                               GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_OK);
  EXPECT_EQ(data[0], justAboveOne(GRADCOMM_WIRE_BF16));
}

TEST(Wire, HalfOverflowIsNonFinite) {
  World world;
  // Above 65504 / (2 n) on rank 0 only: every rank fails alike.
  std::vector<float> data(16, 1.0f);
  if (world.rank == 0)
    data[3] = 40000.0f;
  EXPECT_EQ(gradcomm_dense_all_reduce_wire_f32("wire.overflow", data.data(), 16,
                                               GRADCOMM_WIRE_F16,
                                               GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_NON_FINITE);
  // bfloat16 carries float32's range.
  EXPECT_EQ(gradcomm_dense_all_reduce_wire_f32("wire.bf16range", data.data(),
                                               16, GRADCOMM_WIRE_BF16,
                                               GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK)
      << gradcomm_last_error();
}

TEST(Wire, CountsHalfTheValueBytes) {
  World world;
  std::vector<float> data(1024, 1.0f);
  ASSERT_EQ(gradcomm_dense_all_reduce_wire_f32("wire.bytes32", data.data(),
                                               1024, GRADCOMM_WIRE_F32,
                                               GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK);
  ASSERT_EQ(gradcomm_dense_all_reduce_wire_f32("wire.bytes16", data.data(),
                                               1024, GRADCOMM_WIRE_BF16,
                                               GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK);
  gradcomm_op_stats full{}, half{};
  ASSERT_EQ(gradcomm_stats_get("wire.bytes32", &full), GRADCOMM_OK);
  ASSERT_EQ(gradcomm_stats_get("wire.bytes16", &half), GRADCOMM_OK);
  // The ring all-reduce's 2 (n - 1) / n of the buffer, of 4 and 2 bytes.
  const uint64_t n = static_cast<uint64_t>(world.size);
  EXPECT_EQ(full.value_bytes_sent, 2u * 4096u * (n - 1) / n);
  EXPECT_EQ(half.value_bytes_sent, 2u * 2048u * (n - 1) / n);
}

TEST(Wire, UnknownWireFailsOnEveryRank) {
  std::vector<float> data(8, 1.0f);
  EXPECT_EQ(gradcomm_dense_all_reduce_wire_f32("wire.bad", data.data(), 8,
                                               static_cast<gradcomm_wire>(7),
                                               GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

/// ScaleCom through the recipe, no warm-up, beta 1: the ten largest of
/// |g| are 1 + half a 16-bit place, sent as 1, so the mean is 1 there.
TEST(Wire, ScaleComValuesTravelInSixteenBits) {
  World world;
  for (gradcomm_wire wire : kSixteenBits) {
    const int64_t count = 100, k = 10;
    std::vector<float> grad(count), out(count, -1.0f);
    for (int64_t i = 0; i < count; ++i)
      grad[i] = i >= count - k ? justAboveOne(wire) : 0.001f * i;
    gradcomm_scalecom_options o;
    gradcomm_scalecom_options_init(&o, k);
    o.beta = 1.0f;
    o.warmup_steps = 0;
    o.wire = wire;
    const char *state = wire == GRADCOMM_WIRE_BF16 ? "wire.sc16" : "wire.sch";
    ASSERT_EQ(gradcomm_scalecom_recipe_f32(state, grad.data(), out.data(),
                                           count, &o, GRADCOMM_REDUCE_AVERAGE),
              GRADCOMM_OK)
        << gradcomm_last_error();
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(out[i], i >= count - k ? 1.0f : 0.0f) << i;
    gradcomm_op_stats stats{};
    ASSERT_EQ(gradcomm_stats_get(state, &stats), GRADCOMM_OK);
    if (world.size > 1)
      EXPECT_EQ(stats.value_bytes_sent,
                2u * k * 2u * (world.size - 1) / world.size);
    // The started form gives the same bits (a fresh state: the same step).
    const std::string startedState = std::string(state) + ".started";
    std::vector<float> startedOut(count, -1.0f);
    gradcomm_request request = nullptr;
    ASSERT_EQ(gradcomm_scalecom_recipe_start_f32(
                  startedState.c_str(), grad.data(), startedOut.data(), count,
                  &o, GRADCOMM_REDUCE_AVERAGE, &request),
              GRADCOMM_OK)
        << gradcomm_last_error();
    ASSERT_EQ(gradcomm_wait(&request), GRADCOMM_OK) << gradcomm_last_error();
    EXPECT_EQ(startedOut, out);
  }
}

/// The started dense form and the recipe's started dense warm-up: the same
/// bits as the blocking calls.
TEST(Wire, StartedEqualsBlocking) {
  World world;
  for (gradcomm_wire wire : kSixteenBits) {
    const int64_t count = 3000;
    std::vector<float> blocking(count);
    for (int64_t i = 0; i < count; ++i)
      blocking[i] = std::sin(0.01f * static_cast<float>(i + 7 * world.rank));
    std::vector<float> started = blocking, warmup = blocking;
    ASSERT_EQ(gradcomm_dense_all_reduce_wire_f32("wire.blocking",
                                                 blocking.data(), count, wire,
                                                 GRADCOMM_REDUCE_AVERAGE),
              GRADCOMM_OK);
    gradcomm_request request = nullptr;
    ASSERT_EQ(gradcomm_dense_all_reduce_wire_start_f32(
                  "wire.started", started.data(), count, wire,
                  GRADCOMM_REDUCE_AVERAGE, &request),
              GRADCOMM_OK)
        << gradcomm_last_error();
    ASSERT_EQ(gradcomm_wait(&request), GRADCOMM_OK) << gradcomm_last_error();
    EXPECT_EQ(started, blocking);
    // A dense warm-up step of the recipe, started.
    gradcomm_scalecom_options o;
    gradcomm_scalecom_options_init(&o, 30);
    o.wire = wire;
    std::vector<float> out(count);
    const char *state = wire == GRADCOMM_WIRE_BF16 ? "wire.w16" : "wire.wh";
    ASSERT_EQ(gradcomm_scalecom_recipe_start_f32(
                  state, warmup.data(), out.data(), count, &o,
                  GRADCOMM_REDUCE_AVERAGE, &request),
              GRADCOMM_OK)
        << gradcomm_last_error();
    ASSERT_EQ(gradcomm_wait(&request), GRADCOMM_OK) << gradcomm_last_error();
    EXPECT_EQ(out, blocking);
  }
}

} // namespace

namespace {

/// One local top-k step of a fresh state on every rank: its output, and
/// the value bytes it counted.
std::pair<std::vector<float>, uint64_t>
localTopkStep(const std::string &name, const std::vector<float> &grad,
              gradcomm_wire wire, bool started) {
  const int64_t count = static_cast<int64_t>(grad.size());
  std::vector<float> out(count, -1.0f);
  if (started) {
    gradcomm_request request = nullptr;
    EXPECT_EQ(gradcomm_local_topk_all_gather_wire_start_f32(
                  name.c_str(), grad.data(), out.data(), count, 8, wire,
                  GRADCOMM_REDUCE_SUM, &request),
              GRADCOMM_OK)
        << gradcomm_last_error();
    EXPECT_EQ(gradcomm_wait(&request), GRADCOMM_OK);
  } else {
    EXPECT_EQ(gradcomm_local_topk_all_gather_wire_f32(
                  name.c_str(), grad.data(), out.data(), count, 8, wire,
                  GRADCOMM_REDUCE_SUM, nullptr),
              GRADCOMM_OK)
        << gradcomm_last_error();
  }
  gradcomm_op_stats stats{};
  EXPECT_EQ(gradcomm_stats_get(name.c_str(), &stats), GRADCOMM_OK);
  return {out, stats.value_bytes_sent};
}

} // namespace

TEST(Wire, LocalTopkValuesTravelInSixteenBits) {
  World world;
  const int64_t count = 200;
  // This rank's 8 largest are small integers (exact in 16 bits) except one
  // that 16 bits cannot hold: it arrives rounded.
  std::vector<float> grad(count, 0.0f);
  for (int j = 0; j < 8; ++j)
    grad[world.rank * 10 + j] = static_cast<float>(j + 2);
  for (gradcomm_wire wire : kSixteenBits)
    for (bool started : {false, true}) {
      std::vector<float> input = grad;
      // 2 plus a quarter of the 16-bit spacing there: arrives as 2.
      input[world.rank * 10] = 1.0f + justAboveOne(wire);
      const std::string suffix =
          std::to_string(wire) + (started ? ".started" : "");
      auto [f32, f32Bytes] = localTopkStep("wire.topk.f32." + suffix, input,
                                           GRADCOMM_WIRE_F32, started);
      auto [narrow, bytes] =
          localTopkStep("wire.topk." + suffix, input, wire, started);
      std::vector<float> expected = f32;
      for (int r = 0; r < world.size; ++r)
        expected[r * 10] = 2.0f; // rounded to even on the wire
      EXPECT_EQ(narrow, expected) << "wire " << wire;
      EXPECT_EQ(bytes * 2, f32Bytes) << "wire " << wire;
    }
}

namespace {

/// 1 plus a quarter of the wire type's last place at 1: rounds to 1.
float quarterAboveOne(gradcomm_wire wire) {
  return wire == GRADCOMM_WIRE_BF16 ? 1.0f + std::ldexp(1.0f, -9)
                                    : 1.0f + std::ldexp(1.0f, -12);
}

/// One gossip exchange of `x` on a fresh state (matching schedule, mixing
/// 1/2, step 0), blocking or started; returns the value bytes it counted.
uint64_t gossipStep(const std::string &name, std::vector<float> &x,
                    gradcomm_wire wire, bool started) {
  const int64_t count = static_cast<int64_t>(x.size());
  if (started) {
    gradcomm_request request = nullptr;
    EXPECT_EQ(gradcomm_gossip_exchange_wire_start_f32(
                  name.c_str(), x.data(), count, GRADCOMM_SCHEDULE_MATCHING,
                  0.5f, 3, 1, wire, &request),
              GRADCOMM_OK)
        << gradcomm_last_error();
    EXPECT_EQ(gradcomm_wait(&request), GRADCOMM_OK);
  } else {
    EXPECT_EQ(gradcomm_gossip_exchange_wire_f32(name.c_str(), x.data(), count,
                                                GRADCOMM_SCHEDULE_MATCHING,
                                                0.5f, 3, 1, wire),
              GRADCOMM_OK)
        << gradcomm_last_error();
  }
  gradcomm_op_stats stats{};
  EXPECT_EQ(gradcomm_stats_get(name.c_str(), &stats), GRADCOMM_OK);
  return stats.value_bytes_sent;
}

} // namespace

/// Gossip's replica on a 16-bit wire: small integers mix as in float32;
/// the peer's 1 + a quarter place arrives as 1, so the mix is 1 + an
/// eighth (exact in float32); half the bytes; started = blocking.
TEST(Wire, GossipReplicasTravelInSixteenBits) {
  World world;
  const int64_t count = 300;
  int peer = -1;
  ASSERT_EQ(gradcomm_gossip_peer(GRADCOMM_SCHEDULE_MATCHING, 3, 0, world.rank,
                                 world.size, &peer),
            GRADCOMM_OK);
  for (gradcomm_wire wire : kSixteenBits)
    for (bool started : {false, true}) {
      const std::string suffix =
          std::to_string(wire) + (started ? ".started" : "");
      std::vector<float> ints(count), reference(count);
      for (int64_t i = 0; i < count; ++i)
        ints[i] = reference[i] = static_cast<float>(world.rank * 4 + i % 7);
      uint64_t bytes =
          gossipStep("wire.gossip.ints." + suffix, ints, wire, started);
      gossipStep("wire.gossip.ref." + suffix, reference, GRADCOMM_WIRE_F32,
                 started);
      EXPECT_EQ(ints, reference) << "wire " << wire;
      EXPECT_EQ(bytes, peer < 0 ? 0u : 2u * count) << "wire " << wire;

      std::vector<float> x(count, quarterAboveOne(wire));
      gossipStep("wire.gossip.round." + suffix, x, wire, started);
      const float eighth = (quarterAboveOne(wire) - 1.0f) / 2.0f;
      EXPECT_EQ(x, std::vector<float>(count, peer < 0 ? quarterAboveOne(wire)
                                                      : 1.0f + eighth))
          << "wire " << wire << " peer " << peer;
    }
  // binary16 cannot carry 70000: non-finite on every rank.
  std::vector<float> x(16, 1.0f);
  if (world.rank == 0)
    x[5] = 70000.0f;
  EXPECT_EQ(gradcomm_gossip_exchange_wire_f32("wire.gossip.overflow", x.data(),
                                              16, GRADCOMM_SCHEDULE_MATCHING,
                                              0.5f, 3, 1, GRADCOMM_WIRE_F16),
            GRADCOMM_ERR_NON_FINITE);
}

/// EASGD's differences on a 16-bit wire. Replicas start at 0 (the center
/// too), then every rank moves to 1 + a quarter place: each difference
/// travels as 1, so the center moves by alpha * n exactly, where float32
/// would move it by alpha * n * (1 + a quarter place). Half the exchange's
/// bytes; started = blocking.
TEST(Wire, ElasticAverageDifferencesTravelInSixteenBits) {
  World world;
  const int64_t count = 64;
  const float alpha = 0.5f / static_cast<float>(world.size);
  for (gradcomm_wire wire : kSixteenBits)
    for (bool started : {false, true}) {
      const std::string name =
          "wire.easgd." + std::to_string(wire) + (started ? ".started" : "");
      std::vector<float> x(count, 0.0f);
      for (float value : {0.0f, quarterAboveOne(wire)}) {
        std::fill(x.begin(), x.end(), value);
        if (started) {
          gradcomm_request request = nullptr;
          ASSERT_EQ(
              gradcomm_elastic_average_wire_start_f32(
                  name.c_str(), x.data(), count, alpha, 1, wire, &request),
              GRADCOMM_OK)
              << gradcomm_last_error();
          ASSERT_EQ(gradcomm_wait(&request), GRADCOMM_OK);
        } else {
          ASSERT_EQ(gradcomm_elastic_average_wire_f32(name.c_str(), x.data(),
                                                      count, alpha, 1, wire),
                    GRADCOMM_OK)
              << gradcomm_last_error();
        }
      }
      std::vector<float> center(count);
      ASSERT_EQ(gradcomm_state_read(name.c_str(), center.data(), count),
                GRADCOMM_OK);
      const float moved = 0.0f + alpha * static_cast<float>(world.size);
      EXPECT_EQ(center, std::vector<float>(count, moved)) << "wire " << wire;
      // The replica's own pull is float32's: x - alpha (x - c).
      const float value = quarterAboveOne(wire);
      EXPECT_EQ(x, std::vector<float>(count, value - alpha * (value - 0.0f)));
      gradcomm_op_stats stats{};
      ASSERT_EQ(gradcomm_stats_get(name.c_str(), &stats), GRADCOMM_OK);
      // The center's float32 mean, then two 16-bit exchanges, each the
      // ring all-reduce's 2 (n - 1) / n of its bytes.
      const uint64_t n = static_cast<uint64_t>(world.size);
      auto ring = [n](uint64_t bytes) { return 2u * bytes * (n - 1) / n; };
      EXPECT_EQ(stats.value_bytes_sent,
                ring(4u * count) + 2u * ring(2u * count))
          << "wire " << wire;
    }
}
