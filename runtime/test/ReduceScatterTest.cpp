//===- ReduceScatterTest.cpp - Dense and compressed reduce-scatter --------===//
//
// Part of the GradComm project.
//
// Each rank's shard of a reduce-scatter must be that rank's range of the
// all-reduce's result, and the compressed reduce-scatter's shard that range
// of gradcomm_scalecom_f32's output, with the same memory. The inputs are
// small integers and beta 1/2, so every sum is exact in float32 whatever
// order MPI adds in: the comparisons are bit for bit at 1-4 ranks. With a
// 16-bit wire the inputs are such integers times 1 + a part the 16-bit type
// cannot hold: rounded before they travel, they sum exactly again.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace gradcomm::test;

namespace {

/// Small integers of both signs, different on each rank and step, with
/// few ties among the largest.
std::vector<float> integerGradient(int rank, int step, int64_t count) {
  std::vector<float> grad(count);
  for (int64_t i = 0; i < count; ++i)
    grad[i] = static_cast<float>((i * 37 + rank * 11 + step * 5) % 61) - 30.0f;
  return grad;
}

struct Range {
  int64_t begin = 0, length = 0;
};

Range shardOf(int64_t count, int rank, int size) {
  Range range;
  EXPECT_EQ(
      gradcomm_shard_range(count, rank, size, &range.begin, &range.length),
      GRADCOMM_OK);
  return range;
}

std::vector<float> slice(const std::vector<float> &data, Range range) {
  return std::vector<float>(data.begin() + range.begin,
                            data.begin() + range.begin + range.length);
}

} // namespace

TEST(ReduceScatter, ShardsCoverTheBufferInOrder) {
  for (int size : {1, 2, 3, 4, 7})
    for (int64_t count : {0, 1, 5, 12, 1001}) {
      int64_t next = 0;
      for (int rank = 0; rank < size; ++rank) {
        Range range = shardOf(count, rank, size);
        EXPECT_EQ(range.begin, next);
        EXPECT_TRUE(range.length == count / size ||
                    range.length == count / size + 1);
        next = range.begin + range.length;
      }
      EXPECT_EQ(next, count);
    }
  int64_t begin = 0, length = 0;
  EXPECT_EQ(gradcomm_shard_range(10, 3, 3, &begin, &length),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(gradcomm_shard_range(10, 0, 0, &begin, &length),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

TEST(ReduceScatter, DenseIsTheShardOfTheAllReduce) {
  World world;
  for (int64_t count : {1, 7, 1000, 100003})
    for (gradcomm_reduction reduction :
         {GRADCOMM_REDUCE_SUM, GRADCOMM_REDUCE_AVERAGE}) {
      std::vector<float> data = integerGradient(world.rank, 0, count);
      std::vector<float> all = data;
      ASSERT_EQ(gradcomm_dense_all_reduce_f32("rs.reference", all.data(), count,
                                              reduction),
                GRADCOMM_OK);
      const Range range = shardOf(count, world.rank, world.size);
      std::vector<float> shard(range.length + 1, -7.0f);
      ASSERT_EQ(gradcomm_reduce_scatter_f32("rs.dense", data.data(),
                                            shard.data(), count, reduction),
                GRADCOMM_OK)
          << gradcomm_last_error();
      EXPECT_EQ(shard.back(), -7.0f) << "wrote past the shard";
      shard.pop_back();
      EXPECT_EQ(shard, slice(all, range)) << "count " << count;

      std::vector<float> started(range.length);
      gradcomm_request request = nullptr;
      ASSERT_EQ(gradcomm_reduce_scatter_start_f32("rs.dense", data.data(),
                                                  started.data(), count,
                                                  reduction, &request),
                GRADCOMM_OK);
      ASSERT_EQ(gradcomm_wait(&request), GRADCOMM_OK);
      EXPECT_EQ(started, shard);
    }
  gradcomm_op_stats stats{};
  ASSERT_EQ(gradcomm_stats_get("rs.dense", &stats), GRADCOMM_OK);
  EXPECT_EQ(stats.calls, 16u);
}

TEST(ReduceScatter, CompressedIsTheShardOfScaleCom) {
  World world;
  struct Case {
    gradcomm_selection selection;
    int64_t chunkSize;
    int64_t k;
    gradcomm_reduction reduction;
  };
  const int64_t count = 1003;
  for (Case c : {Case{GRADCOMM_SELECT_EXACT, 0, 40, GRADCOMM_REDUCE_SUM},
                 Case{GRADCOMM_SELECT_EXACT, 0, 200, GRADCOMM_REDUCE_AVERAGE},
                 Case{GRADCOMM_SELECT_CHUNK, 100, 11, GRADCOMM_REDUCE_SUM}}) {
    const std::string fused = uniqueName("rs.fused") + std::to_string(c.k);
    const std::string sharded = uniqueName("rs.sharded") + std::to_string(c.k);
    const Range range = shardOf(count, world.rank, world.size);
    // Five steps: the leader moves round the ranks, memory builds up.
    for (int step = 0; step < 5; ++step) {
      std::vector<float> grad = integerGradient(world.rank, step, count);
      std::vector<float> out(count);
      ASSERT_EQ(gradcomm_scalecom_f32(fused.c_str(), grad.data(), out.data(),
                                      count, c.k, c.selection, c.chunkSize,
                                      0.5f, c.reduction),
                GRADCOMM_OK);
      std::vector<float> shard(range.length, -1.0f);
      if (step % 2 == 0) {
        ASSERT_EQ(gradcomm_scalecom_reduce_scatter_f32(
                      sharded.c_str(), grad.data(), shard.data(), count, c.k,
                      c.selection, c.chunkSize, 0.5f, c.reduction),
                  GRADCOMM_OK)
            << gradcomm_last_error();
      } else {
        gradcomm_request request = nullptr;
        ASSERT_EQ(gradcomm_scalecom_reduce_scatter_start_f32(
                      sharded.c_str(), grad.data(), shard.data(), count, c.k,
                      c.selection, c.chunkSize, 0.5f, c.reduction, &request),
                  GRADCOMM_OK)
            << gradcomm_last_error();
        grad.assign(count, 1e30f); // free at once: read at the start
        ASSERT_EQ(gradcomm_wait(&request), GRADCOMM_OK);
      }
      EXPECT_EQ(shard, slice(out, range)) << "step " << step;
      EXPECT_EQ(readState(sharded, count), readState(fused, count))
          << "step " << step;
    }
    gradcomm_op_stats stats{};
    ASSERT_EQ(gradcomm_stats_get(sharded.c_str(), &stats), GRADCOMM_OK);
    EXPECT_EQ(stats.calls, 5u);
    // k values, (n - 1) / n of them leave each rank per step.
    EXPECT_EQ(stats.value_bytes_sent,
              5u * (4u * c.k * (world.size - 1) / world.size));
  }
}

TEST(ReduceScatter, RefusesOnEveryRankAlike) {
  World world;
  std::vector<float> grad(100, 1.0f), shard(100);
  // One rank's shard overlapping its gradient: every rank fails with its
  // message.
  float *mine = world.rank == world.size - 1 ? grad.data() + 10 : shard.data();
  EXPECT_EQ(gradcomm_scalecom_reduce_scatter_f32(
                uniqueName("rs").c_str(), grad.data(), mine, 100, 5,
                GRADCOMM_SELECT_EXACT, 0, 1.0f, GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "'grad' and 'shard' overlap"));
  if (world.size > 1) {
    EXPECT_EQ(gradcomm_reduce_scatter_f32("rs.mismatch", grad.data(),
                                          shard.data(), 90 + world.rank,
                                          GRADCOMM_REDUCE_SUM),
              GRADCOMM_ERR_MISMATCH);
  }
}

TEST(ReduceScatter, SkipPolicyZeroesTheShardAndKeepsTheMemory) {
  World world;
  ASSERT_EQ(gradcomm_set_nonfinite_policy(GRADCOMM_NONFINITE_SKIP),
            GRADCOMM_OK);
  const std::string name = uniqueName("rs");
  const int64_t count = 64;
  const Range range = shardOf(count, world.rank, world.size);
  std::vector<float> grad = integerGradient(world.rank, 0, count);
  std::vector<float> shard(range.length, -1.0f);
  ASSERT_EQ(gradcomm_scalecom_reduce_scatter_f32(
                name.c_str(), grad.data(), shard.data(), count, 4,
                GRADCOMM_SELECT_EXACT, 0, 1.0f, GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK);
  const std::vector<float> memory = readState(name, count);
  if (world.rank == 0)
    grad[3] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_EQ(gradcomm_scalecom_reduce_scatter_f32(
                name.c_str(), grad.data(), shard.data(), count, 4,
                GRADCOMM_SELECT_EXACT, 0, 1.0f, GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK);
  EXPECT_EQ(shard, std::vector<float>(range.length, 0.0f));
  EXPECT_EQ(readState(name, count), memory);
  std::vector<float> dense(range.length, -1.0f);
  ASSERT_EQ(gradcomm_reduce_scatter_f32("rs.skip", grad.data(), dense.data(),
                                        count, GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK);
  EXPECT_EQ(dense, std::vector<float>(range.length, 0.0f));
  ASSERT_EQ(gradcomm_set_nonfinite_policy(GRADCOMM_NONFINITE_ERROR),
            GRADCOMM_OK);
}

namespace {

/// Every element +-2 (norm 2 sqrt(count)), so clipping to sqrt(count)
/// halves it exactly and the sums stay exact.
std::vector<float> plusMinusTwo(int rank, int step, int64_t count) {
  std::vector<float> grad(count);
  for (int64_t i = 0; i < count; ++i)
    grad[i] = (i * 7 + rank + step) % 3 == 0 ? -2.0f : 2.0f;
  return grad;
}

} // namespace

TEST(ReduceScatter, RecipeIsTheShardOfTheRecipe) {
  World world;
  const int64_t count = 1024;
  struct Case {
    const char *name;
    int64_t warmupSteps;
    float clip;
    int32_t dense;
    std::vector<float> (*gradient)(int, int, int64_t);
    // Momentum 0.5 keeps integer gradients' velocities dyadic: every sum
    // is exact whatever order the transport adds in.
    float momentum = 0.0f;
    int32_t nesterov = 0;
    int32_t keepVelocity = 0;
  };
  for (Case c : {Case{"warmup", 2, 0.0f, 0, integerGradient},
                 Case{"clip", 1, 32.0f, 0, plusMinusTwo},
                 Case{"dense", 0, 0.0f, 1, integerGradient},
                 Case{"momentum", 1, 0.0f, 0, integerGradient, 0.5f},
                 Case{"nesterov", 1, 0.0f, 0, integerGradient, 0.5f, 1},
                 Case{"momentum-kept", 1, 0.0f, 0, integerGradient, 0.5f, 0, 1},
                 Case{"momentum-dense", 0, 0.0f, 1, integerGradient, 0.5f}}) {
    gradcomm_scalecom_options options;
    gradcomm_scalecom_options_init(&options, 40);
    options.warmup_steps = c.warmupSteps;
    options.clip = c.clip;
    options.dense = c.dense;
    options.momentum = c.momentum;
    options.nesterov = c.nesterov;
    options.keep_velocity = c.keepVelocity;
    const std::string fused = uniqueName("rs.recipe.fused") + c.name;
    const std::string sharded = uniqueName("rs.recipe.sharded") + c.name;
    const Range range = shardOf(count, world.rank, world.size);
    for (int step = 0; step < 5; ++step) {
      const std::vector<float> grad = c.gradient(world.rank, step, count);
      std::vector<float> out(count);
      ASSERT_EQ(gradcomm_scalecom_recipe_f32(fused.c_str(), grad.data(),
                                             out.data(), count, &options,
                                             GRADCOMM_REDUCE_SUM),
                GRADCOMM_OK)
          << gradcomm_last_error();
      std::vector<float> shard(range.length, -1.0f);
      ASSERT_EQ(gradcomm_scalecom_reduce_scatter_recipe_f32(
                    sharded.c_str(), grad.data(), shard.data(), count, &options,
                    GRADCOMM_REDUCE_SUM),
                GRADCOMM_OK)
          << gradcomm_last_error();
      EXPECT_EQ(shard, slice(out, range)) << c.name << " step " << step;
      const std::vector<float> memory = readState(sharded, count);
      EXPECT_EQ(memory, readState(fused, count)) << c.name << " step " << step;
      // Dense steps leave the memory alone; the first compressed one
      // writes it.
      const bool dense = c.dense || step < c.warmupSteps;
      EXPECT_EQ(memory == std::vector<float>(count, 0.0f), dense)
          << c.name << " step " << step;
      if (c.momentum > 0.0f) {
        // The velocity too, masked at the sent indices (unless kept:
        // a kept velocity has fewer than k zeros with these gradients).
        const std::vector<float> velocity =
            readState(sharded + ".velocity", count);
        EXPECT_EQ(velocity, readState(fused + ".velocity", count))
            << c.name << " step " << step;
        EXPECT_EQ(std::count(velocity.begin(), velocity.end(), 0.0f) >=
                      options.k,
                  !dense && !c.keepVelocity)
            << c.name << " step " << step;
      }
    }
    gradcomm_op_stats stats{};
    ASSERT_EQ(gradcomm_stats_get(sharded.c_str(), &stats), GRADCOMM_OK);
    EXPECT_EQ(stats.calls, 5u);
  }
}

TEST(ReduceScatter, RecipeRefusesWhatIsNotBuilt) {
  World world;
  const int64_t count = 64;
  const Range range = shardOf(count, world.rank, world.size);
  std::vector<float> grad(count, 1.0f), shard(range.length);
  gradcomm_scalecom_options options;
  gradcomm_scalecom_options_init(&options, 4);
  // On one rank only: every rank refuses, with the same message.
  if (world.rank == world.size - 1)
    options.warmup = GRADCOMM_WARMUP_RAMP;
  EXPECT_EQ(gradcomm_scalecom_reduce_scatter_recipe_f32(
                uniqueName("rs.recipe").c_str(), grad.data(), shard.data(),
                count, &options, GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_UNSUPPORTED);
  EXPECT_TRUE(
      contains(gradcomm_last_error(), "a ramp warm-up is not built for it"))
      << gradcomm_last_error();
}

TEST(ReduceScatter, AllGatherUndoesTheReduceScatter) {
  World world;
  const int64_t count = 1000 * world.size;
  std::vector<float> data = integerGradient(world.rank, 0, count);
  std::vector<float> all = data;
  ASSERT_EQ(gradcomm_dense_all_reduce_f32("ag.reference", all.data(), count,
                                          GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK);
  const Range range = shardOf(count, world.rank, world.size);
  std::vector<float> shard(range.length);
  ASSERT_EQ(gradcomm_reduce_scatter_f32("ag.scatter", data.data(), shard.data(),
                                        count, GRADCOMM_REDUCE_SUM),
            GRADCOMM_OK);
  std::vector<float> gathered(count, -1.0f);
  ASSERT_EQ(gradcomm_all_gather_f32("ag", shard.data(), gathered.data(), count),
            GRADCOMM_OK)
      << gradcomm_last_error();
  EXPECT_EQ(gathered, all);
  // In place: the shard already sits at this rank's range.
  std::vector<float> inPlace(count, 0.0f);
  std::copy(shard.begin(), shard.end(), inPlace.begin() + range.begin);
  ASSERT_EQ(gradcomm_all_gather_f32("ag", inPlace.data() + range.begin,
                                    inPlace.data(), count),
            GRADCOMM_OK)
      << gradcomm_last_error();
  EXPECT_EQ(inPlace, all);
  gradcomm_op_stats stats{};
  ASSERT_EQ(gradcomm_stats_get("ag", &stats), GRADCOMM_OK);
  EXPECT_EQ(stats.calls, 2u);
  if (world.size > 1) {
    // Shards that do not divide: refused on every rank alike.
    EXPECT_EQ(
        gradcomm_all_gather_f32("ag", shard.data(), gathered.data(), count + 1),
        GRADCOMM_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(gradcomm_last_error(), "do not divide"))
        << gradcomm_last_error();
  }
}

namespace {

constexpr gradcomm_wire kSixteenBits[] = {GRADCOMM_WIRE_BF16,
                                          GRADCOMM_WIRE_F16};

/// A relative part below half the wire type's last place for magnitudes
/// under 32: x (1 + it) rounds to x in that type.
float belowHalfAPlace(gradcomm_wire wire) {
  return wire == GRADCOMM_WIRE_BF16 ? std::ldexp(1.0f, -10)
                                    : std::ldexp(1.0f, -12);
}

/// `values` times 1 + belowHalfAPlace(wire).
std::vector<float> offTheWire(std::vector<float> values, gradcomm_wire wire) {
  for (float &value : values)
    value *= 1.0f + belowHalfAPlace(wire);
  return values;
}

uint64_t bytesSent(const std::string &name) {
  gradcomm_op_stats stats{};
  EXPECT_EQ(gradcomm_stats_get(name.c_str(), &stats), GRADCOMM_OK);
  return stats.value_bytes_sent;
}

} // namespace

TEST(ReduceScatter, SixteenBitWireRoundsBeforeTheSum) {
  World world;
  const int64_t count = 1001;
  const Range range = shardOf(count, world.rank, world.size);
  const uint64_t n = static_cast<uint64_t>(world.size);
  for (gradcomm_wire wire : kSixteenBits)
    for (gradcomm_reduction reduction :
         {GRADCOMM_REDUCE_SUM, GRADCOMM_REDUCE_AVERAGE}) {
      const std::vector<float> integers = integerGradient(world.rank, 0, count);
      // The reference: the integers' own reduce-scatter in float32.
      std::vector<float> expected(range.length);
      ASSERT_EQ(gradcomm_reduce_scatter_f32("rs.wire.reference",
                                            integers.data(), expected.data(),
                                            count, reduction),
                GRADCOMM_OK);
      const std::vector<float> data = offTheWire(integers, wire);
      const std::string name = uniqueName("rs.wire") + std::to_string(wire) +
                               std::to_string(reduction);
      std::vector<float> shard(range.length, -1.0f);
      ASSERT_EQ(gradcomm_reduce_scatter_wire_f32(name.c_str(), data.data(),
                                                 shard.data(), count, wire,
                                                 reduction),
                GRADCOMM_OK)
          << gradcomm_last_error();
      EXPECT_EQ(shard, expected) << "wire " << wire;
      std::vector<float> started(range.length, -1.0f);
      gradcomm_request request = nullptr;
      ASSERT_EQ(gradcomm_reduce_scatter_wire_start_f32(
                    name.c_str(), data.data(), started.data(), count, wire,
                    reduction, &request),
                GRADCOMM_OK);
      ASSERT_EQ(gradcomm_wait(&request), GRADCOMM_OK);
      EXPECT_EQ(started, expected) << "wire " << wire;
      // Two bytes a value: (n - 1) / n of the buffer leaves each rank.
      EXPECT_EQ(bytesSent(name), 2u * (2u * count * (n - 1) / n));
      // A float32 wire sends the values as they are.
      if (world.size > 1 || reduction == GRADCOMM_REDUCE_SUM) {
        std::vector<float> exact(range.length);
        ASSERT_EQ(gradcomm_reduce_scatter_wire_f32(
                      "rs.wire.f32", data.data(), exact.data(), count,
                      GRADCOMM_WIRE_F32, reduction),
                  GRADCOMM_OK);
        EXPECT_NE(exact, expected);
      }
    }
  // binary16 overflow of the n-rank sum counts as non-finite.
  std::vector<float> large(64, 65504.0f / (2 * world.size) * 1.5f);
  std::vector<float> shard(shardOf(64, world.rank, world.size).length);
  EXPECT_EQ(gradcomm_reduce_scatter_wire_f32(
                "rs.wire.overflow", large.data(), shard.data(), 64,
                GRADCOMM_WIRE_F16, GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_NON_FINITE);
  EXPECT_EQ(gradcomm_reduce_scatter_wire_f32(
                "rs.wire.bad", large.data(), shard.data(), 64,
                static_cast<gradcomm_wire>(7), GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

namespace {

/// Integers in [-3, 3]: with beta 1 the memory holds sums of a few steps'
/// values, so every rank's selected values and their n-rank sums stay
/// small integers, exact in 16 bits in any order.
std::vector<float> smallIntegers(int rank, int step, int64_t count) {
  std::vector<float> grad(count);
  for (int64_t i = 0; i < count; ++i)
    grad[i] = static_cast<float>((i * 37 + rank * 11 + step * 5) % 7) - 3.0f;
  return grad;
}

} // namespace

TEST(ReduceScatter, RecipeSendsItsValuesInTheWire) {
  World world;
  const int64_t count = 1024;
  const Range range = shardOf(count, world.rank, world.size);
  const uint64_t n = static_cast<uint64_t>(world.size);
  for (gradcomm_wire wire : kSixteenBits) {
    gradcomm_scalecom_options options;
    gradcomm_scalecom_options_init(&options, 40);
    options.beta = 1.0f;
    options.warmup_steps = 2;
    options.wire = wire;
    const std::string tag = std::to_string(wire);
    const std::string fused = uniqueName("rs.wire.fused" + tag);
    const std::string sharded = uniqueName("rs.wire.sharded" + tag);
    for (int step = 0; step < 5; ++step) {
      const std::vector<float> grad =
          offTheWire(smallIntegers(world.rank, step, count), wire);
      std::vector<float> out(count);
      ASSERT_EQ(gradcomm_scalecom_recipe_f32(fused.c_str(), grad.data(),
                                             out.data(), count, &options,
                                             GRADCOMM_REDUCE_SUM),
                GRADCOMM_OK)
          << gradcomm_last_error();
      std::vector<float> shard(range.length, -1.0f);
      ASSERT_EQ(gradcomm_scalecom_reduce_scatter_recipe_f32(
                    sharded.c_str(), grad.data(), shard.data(), count, &options,
                    GRADCOMM_REDUCE_SUM),
                GRADCOMM_OK)
          << gradcomm_last_error();
      EXPECT_EQ(shard, slice(out, range))
          << "wire " << wire << " step " << step;
      EXPECT_EQ(readState(sharded, count), readState(fused, count))
          << "wire " << wire << " step " << step;
      // Every value was rounded to its integer before it travelled.
      for (float value : shard)
        ASSERT_EQ(value, std::round(value)) << "wire " << wire;
    }
    // Two dense steps of `count` values, three of k, two bytes each.
    const uint64_t dense = 2u * count * (n - 1) / n;
    const uint64_t sparse = 2u * options.k * (n - 1) / n;
    EXPECT_EQ(bytesSent(sharded), 2 * dense + 3 * sparse);
  }
}

TEST(ReduceScatter, AllGatherInSixteenBits) {
  World world;
  const int64_t count = 256 * world.size;
  const Range range = shardOf(count, world.rank, world.size);
  const uint64_t n = static_cast<uint64_t>(world.size);
  for (gradcomm_wire wire : kSixteenBits) {
    // Integers gather exactly; the part 16 bits cannot hold is dropped.
    const std::vector<float> whole = integerGradient(0, 1, count);
    const std::vector<float> shard = offTheWire(slice(whole, range), wire);
    const std::string name = uniqueName("ag.wire") + std::to_string(wire);
    std::vector<float> gathered(count, -1.0f);
    ASSERT_EQ(gradcomm_all_gather_wire_f32(name.c_str(), shard.data(),
                                           gathered.data(), count, wire),
              GRADCOMM_OK)
        << gradcomm_last_error();
    EXPECT_EQ(gathered, whole) << "wire " << wire;
    // In place.
    std::vector<float> inPlace(count, 0.0f);
    std::copy(shard.begin(), shard.end(), inPlace.begin() + range.begin);
    ASSERT_EQ(gradcomm_all_gather_wire_f32(name.c_str(),
                                           inPlace.data() + range.begin,
                                           inPlace.data(), count, wire),
              GRADCOMM_OK)
        << gradcomm_last_error();
    EXPECT_EQ(inPlace, whole) << "wire " << wire;
    EXPECT_EQ(bytesSent(name), 2 * (2u * count * (n - 1) / n));
  }
}

/// The selection per segment is each segment's own recipe step: the shard
/// is the range of the per-segment all-reduce steps' outputs put together,
/// the memory (and the velocity) their memories, bit for bit, through a
/// dense warm-up step and compressed ones, with and without momentum
/// correction. A segment whose k is its length is sent whole, as a dense
/// layer; one whose k is 0 (zero padding) sends nothing.
TEST(ReduceScatter, SegmentsSelectPerTensor) {
  World world;
  const int64_t count = 1003;
  const std::vector<int64_t> ends = {300, 900, 1000, 1003};
  const std::vector<int64_t> ks = {6, 3, 100, 0};
  const int64_t k = 109;
  const Range range = shardOf(count, world.rank, world.size);
  gradcomm_scalecom_options options;
  gradcomm_scalecom_options_init(&options, k);
  options.warmup_steps = 1;
  std::string sharded;
  // Momentum 0.5 keeps the sums exact (RecipeIsTheShardOfTheRecipe).
  for (float momentum : {0.0f, 0.5f}) {
    options.momentum = momentum;
    const std::string tag = momentum > 0.0f ? ".momentum" : "";
    sharded = uniqueName("rs.segments") + tag;
    for (int step = 0; step < 5; ++step) {
      std::vector<float> grad = integerGradient(world.rank, step, count);
      std::fill(grad.begin() + 1000, grad.end(), 0.0f); // the padding
      std::vector<float> whole(count, 0.0f), memory(count, 0.0f),
          velocity(count, 0.0f);
      int64_t begin = 0;
      for (size_t s = 0; s + 1 < ends.size(); ++s) {
        const int64_t length = ends[s] - begin;
        const std::string part =
            uniqueName("rs.segment") + tag + std::to_string(s);
        gradcomm_scalecom_options own = options;
        own.k = ks[s];
        // A segment sent whole is a dense layer (its velocity unmasked).
        own.dense = ks[s] == length;
        ASSERT_EQ(gradcomm_scalecom_recipe_f32(
                      part.c_str(), grad.data() + begin, whole.data() + begin,
                      length, &own, GRADCOMM_REDUCE_AVERAGE),
                  GRADCOMM_OK)
            << gradcomm_last_error();
        const std::vector<float> m = readState(part, length);
        std::copy(m.begin(), m.end(), memory.begin() + begin);
        if (momentum > 0.0f) {
          const std::vector<float> u = readState(part + ".velocity", length);
          std::copy(u.begin(), u.end(), velocity.begin() + begin);
        }
        begin = ends[s];
      }
      std::vector<float> shard(range.length, -1.0f);
      ASSERT_EQ(gradcomm_scalecom_reduce_scatter_segments_f32(
                    sharded.c_str(), grad.data(), shard.data(), count,
                    ends.data(), ks.data(), 4, &options,
                    GRADCOMM_REDUCE_AVERAGE),
                GRADCOMM_OK)
          << gradcomm_last_error();
      EXPECT_EQ(shard, slice(whole, range)) << "step " << step << tag;
      EXPECT_EQ(readState(sharded, count), memory) << "step " << step << tag;
      if (momentum > 0.0f)
        EXPECT_EQ(readState(sharded + ".velocity", count), velocity)
            << "step " << step;
    }
  }
  const uint64_t n = static_cast<uint64_t>(world.size);
  // One dense step of `count` values, four of k.
  EXPECT_EQ(bytesSent(sharded),
            4u * count * (n - 1) / n + 4u * (4u * k * (n - 1) / n));

  // Bad segments fail on every rank alike.
  std::vector<float> grad(count, 1.0f), shard(range.length);
  const std::vector<int64_t> short_ = {300, 900};
  EXPECT_EQ(gradcomm_scalecom_reduce_scatter_segments_f32(
                sharded.c_str(), grad.data(), shard.data(), count,
                short_.data(), ks.data(), 2, &options, GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "the segments cover 900 of"))
      << gradcomm_last_error();
  const std::vector<int64_t> tooMany = {301, 3, 100, 0};
  EXPECT_EQ(gradcomm_scalecom_reduce_scatter_segments_f32(
                sharded.c_str(), grad.data(), shard.data(), count, ends.data(),
                tooMany.data(), 4, &options, GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "segment 0's k must be in"))
      << gradcomm_last_error();
  gradcomm_scalecom_options wrong = options;
  wrong.k = k - 1;
  EXPECT_EQ(gradcomm_scalecom_reduce_scatter_segments_f32(
                sharded.c_str(), grad.data(), shard.data(), count, ends.data(),
                ks.data(), 4, &wrong, GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(),
                       "the segments' k sum to 109, not k = 108"))
      << gradcomm_last_error();
  wrong = options;
  wrong.selection = GRADCOMM_SELECT_CHUNK;
  wrong.chunk_size = 10;
  EXPECT_EQ(gradcomm_scalecom_reduce_scatter_segments_f32(
                sharded.c_str(), grad.data(), shard.data(), count, ends.data(),
                ks.data(), 4, &wrong, GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "a selection per segment is "
                                              "exact"))
      << gradcomm_last_error();
  if (world.size > 1) {
    // Other k's on one rank: the agreement names the segments.
    std::vector<int64_t> mine = ks;
    if (world.rank == 0)
      mine = {5, 4, 100, 0};
    EXPECT_EQ(gradcomm_scalecom_reduce_scatter_segments_f32(
                  sharded.c_str(), grad.data(), shard.data(), count,
                  ends.data(), mine.data(), 4, &options,
                  GRADCOMM_REDUCE_AVERAGE),
              GRADCOMM_ERR_MISMATCH);
    EXPECT_TRUE(contains(gradcomm_last_error(), "segments"))
        << gradcomm_last_error();
  }
}
