//===- MemrefTest.cpp - Entry points taking MLIR memref descriptors -------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "gradcomm/runtime_memref.h"

#include <cmath>
#include <cstring>

using namespace gradcomm::test;

namespace {

/// MLIR's ranked descriptor layout (StridedMemRefType<T, N>).
template <typename T, int N> struct Descriptor {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

template <typename T, int N>
gradcomm_unranked_memref unranked(Descriptor<T, N> &descriptor) {
  return {N, &descriptor};
}

TEST(Memref, ContiguousTwoDimensionalWithOffset) {
  World world;
  std::vector<float> storage(3 + 4 * 5);
  for (size_t i = 0; i < storage.size(); ++i)
    storage[i] = static_cast<float>(i + world.rank);
  Descriptor<float, 2> d{storage.data(), storage.data(), 3, {4, 5}, {5, 1}};
  gradcomm_unranked_memref m = unranked(d);
  ASSERT_OK(_mlir_ciface_gradcomm_rt_dense_all_reduce_f32("memref", &m,
                                                          GRADCOMM_REDUCE_SUM));
  // The 3 elements before the offset are untouched.
  EXPECT_EQ(storage[0], static_cast<float>(world.rank));
  for (int64_t i = 0; i < 20; ++i) {
    float expected = 0.0f;
    for (int r = 0; r < world.size; ++r)
      expected += static_cast<float>(3 + i + r);
    EXPECT_EQ(storage[3 + i], expected);
  }
}

TEST(Memref, NonContiguousLayoutIsRejected) {
  std::vector<float> storage(20, 1.0f);
  // A transposed view: strides {1, 4}.
  Descriptor<float, 2> d{storage.data(), storage.data(), 0, {5, 4}, {1, 5}};
  gradcomm_unranked_memref m = unranked(d);
  EXPECT_EQ(_mlir_ciface_gradcomm_rt_dense_all_reduce_f32("t", &m,
                                                          GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(),
                       "memref 'data' is not contiguous row-major (dimension "
                       "1 has stride 5, expected 1)"))
      << gradcomm_last_error();
  // Size-1 dimensions may carry any stride.
  Descriptor<float, 2> row{
      storage.data(), storage.data(), 0, {1, 20}, {999, 1}};
  gradcomm_unranked_memref r = unranked(row);
  EXPECT_OK(_mlir_ciface_gradcomm_rt_dense_all_reduce_f32(
      "row", &r, GRADCOMM_REDUCE_AVERAGE));
  EXPECT_EQ(_mlir_ciface_gradcomm_rt_dense_all_reduce_f32("null", nullptr,
                                                          GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

TEST(Memref, ScaleComMatchesThePointerEntryPoint) {
  World world;
  const int64_t count = 600, k = 12;
  std::string viaMemref = uniqueName("m"), viaPointer = uniqueName("p");
  for (uint64_t step = 0; step < 4; ++step) {
    std::vector<float> grad = gradient(50, world.rank, step, count);
    std::vector<float> out1(count), out2(count);
    Descriptor<float, 2> g{grad.data(), grad.data(), 0, {20, 30}, {30, 1}};
    Descriptor<float, 2> o{out1.data(), out1.data(), 0, {20, 30}, {30, 1}};
    gradcomm_unranked_memref gm = unranked(g), om = unranked(o);
    ASSERT_OK(_mlir_ciface_gradcomm_rt_scalecom_f32(
        viaMemref.c_str(), &gm, &om, k, GRADCOMM_SELECT_EXACT, 0, 0.5f,
        GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_scalecom_f32(
        viaPointer.c_str(), grad.data(), out2.data(), count, k,
        GRADCOMM_SELECT_EXACT, 0, 0.5f, GRADCOMM_REDUCE_AVERAGE));
    EXPECT_EQ(out1, out2);
  }
}

// The compiled recipe call (dense warm-up; a ramp warm-up with clipping;
// momentum correction, Nesterov, a dense layer with momentum) equals the
// options struct's entry point; started and waited for too, as
// gradcomm-overlap-collectives emits it.
TEST(Memref, ScaleComRecipeMatchesTheOptionsEntryPoint) {
  World world;
  const int64_t count = 600, k = 12;
  struct Case {
    int64_t warmupSteps;
    float rampFrom, clip, momentum;
    int32_t nesterov, dense;
  };
  int number = 0;
  // Every argument must reach the options: one the memref call dropped
  // (momentum, Nesterov, dense) would change its results from step 1 on.
  for (const Case &c :
       {Case{3, 0.0f, 0.0f, 0.0f, 0, 0}, Case{4, 2.0f, 0.5f, 0.0f, 0, 0},
        Case{2, 0.0f, 0.0f, 0.9f, 0, 0}, Case{2, 0.0f, 0.0f, 0.9f, 1, 0},
        Case{0, 0.0f, 0.0f, 0.9f, 0, 1}}) {
    const std::string tag = std::to_string(number++);
    const std::string viaMemref = uniqueName("m" + tag);
    const std::string viaStart = uniqueName("s" + tag);
    const std::string viaPointer = uniqueName("p" + tag);
    gradcomm_scalecom_options o;
    gradcomm_scalecom_options_init(&o, k);
    o.warmup_steps = c.warmupSteps;
    o.warmup = c.rampFrom > 0 ? GRADCOMM_WARMUP_RAMP : GRADCOMM_WARMUP_DENSE;
    o.warmup_start_ratio = c.rampFrom > 0 ? c.rampFrom : 4.0f;
    o.clip = c.clip;
    o.momentum = c.momentum;
    o.nesterov = c.nesterov;
    o.dense = c.dense;
    for (uint64_t step = 0; step < 6; ++step) {
      std::vector<float> grad = gradient(51, world.rank, step, count);
      std::vector<float> out1(count), out2(count), out3(count);
      Descriptor<float, 2> g{grad.data(), grad.data(), 0, {20, 30}, {30, 1}};
      Descriptor<float, 2> o1{out1.data(), out1.data(), 0, {20, 30}, {30, 1}};
      Descriptor<float, 2> o3{out3.data(), out3.data(), 0, {20, 30}, {30, 1}};
      gradcomm_unranked_memref gm = unranked(g), om = unranked(o1),
                               sm = unranked(o3);
      ASSERT_OK(_mlir_ciface_gradcomm_rt_scalecom_recipe_f32(
          viaMemref.c_str(), &gm, &om, k, GRADCOMM_SELECT_EXACT, 0, 0.5f,
          c.warmupSteps, c.rampFrom, c.clip, c.momentum, c.nesterov, c.dense,
          GRADCOMM_REDUCE_AVERAGE));
      ASSERT_OK(_mlir_ciface_gradcomm_rt_scalecom_recipe_start_f32(
          viaStart.c_str(), &gm, &sm, k, GRADCOMM_SELECT_EXACT, 0, 0.5f,
          c.warmupSteps, c.rampFrom, c.clip, c.momentum, c.nesterov, c.dense,
          GRADCOMM_REDUCE_AVERAGE));
      ASSERT_OK(_mlir_ciface_gradcomm_rt_wait_f32(viaStart.c_str(), &sm));
      ASSERT_OK(gradcomm_scalecom_recipe_f32(viaPointer.c_str(), grad.data(),
                                             out2.data(), count, &o,
                                             GRADCOMM_REDUCE_AVERAGE));
      EXPECT_EQ(out1, out2) << "case " << tag << ", step " << step;
      EXPECT_EQ(out3, out2) << "case " << tag << ", step " << step;
    }
  }
}

TEST(Memref, UnfusedOpsWithIndexMemrefs) {
  World world;
  const int64_t count = 64, k = 8;
  std::string name = uniqueName("w");
  std::vector<float> grad = gradient(51, world.rank, 0, count), out(count);
  std::vector<float> values(k);
  std::vector<int64_t> indices(k);
  Descriptor<float, 1> g{grad.data(), grad.data(), 0, {count}, {1}};
  Descriptor<float, 1> o{out.data(), out.data(), 0, {count}, {1}};
  Descriptor<float, 1> v{values.data(), values.data(), 0, {k}, {1}};
  Descriptor<int64_t, 1> i{indices.data(), indices.data(), 0, {k}, {1}};
  gradcomm_unranked_memref gm = unranked(g), om = unranked(o), vm = unranked(v),
                           im = unranked(i);
  ASSERT_OK(_mlir_ciface_gradcomm_rt_cltk_compress_f32(
      name.c_str(), &gm, k, GRADCOMM_SELECT_CHUNK, 8, &vm, &im));
  ASSERT_OK(_mlir_ciface_gradcomm_rt_sparse_all_reduce_f32(
      "sar", &vm, &im, &om, GRADCOMM_REDUCE_SUM));
  ASSERT_OK(
      _mlir_ciface_gradcomm_rt_memory_update_f32(name.c_str(), &gm, &im, 1.0f));
  uint64_t step = 0;
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 1u);
  EXPECT_TRUE(sameOnAllRanks(out));
  // k disagrees with the values memref.
  EXPECT_EQ(_mlir_ciface_gradcomm_rt_cltk_compress_f32(
                name.c_str(), &gm, k + 1, GRADCOMM_SELECT_EXACT, 0, &vm, &im),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "must hold k = 9 elements"));
}

TEST(Memref, GossipAndLocalTopk) {
  World world;
  std::vector<float> x(6, static_cast<float>(world.rank));
  Descriptor<float, 1> xd{x.data(), x.data(), 0, {6}, {1}};
  gradcomm_unranked_memref xm = unranked(xd);
  ASSERT_OK(_mlir_ciface_gradcomm_rt_gossip_exchange_f32(
      uniqueName("g").c_str(), &xm, GRADCOMM_SCHEDULE_RING, 0.5f, 0, 1));
  EXPECT_EQ(
      _mlir_ciface_gradcomm_rt_gossip_exchange_f32(
          uniqueName("g").c_str(), &xm, GRADCOMM_SCHEDULE_RING, 0.5f, -1, 1),
      GRADCOMM_ERR_INVALID_ARGUMENT);
  std::vector<float> grad = gradient(52, world.rank, 0, 6), out(6);
  Descriptor<float, 1> g{grad.data(), grad.data(), 0, {6}, {1}};
  Descriptor<float, 1> o{out.data(), out.data(), 0, {6}, {1}};
  gradcomm_unranked_memref gm = unranked(g), om = unranked(o);
  ASSERT_OK(_mlir_ciface_gradcomm_rt_local_topk_all_gather_f32(
      uniqueName("l").c_str(), &gm, &om, 2, GRADCOMM_REDUCE_AVERAGE));
  EXPECT_TRUE(sameOnAllRanks(out));
}

} // namespace

namespace {

TEST(Memref, SizesWhoseProductOverflowsAreRejected) {
  float storage[4] = {1, 2, 3, 4};
  // 2^32 * 2^32 elements wraps to 0 in int64 arithmetic.
  const int64_t huge = int64_t(1) << 32;
  Descriptor<float, 2> d{storage, storage, 0, {huge, huge}, {huge, 1}};
  gradcomm_unranked_memref m = unranked(d);
  EXPECT_EQ(_mlir_ciface_gradcomm_rt_dense_all_reduce_f32("huge", &m,
                                                          GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(
      contains(gradcomm_last_error(), "has more elements than fit in memory"))
      << gradcomm_last_error();
}

TEST(Memref, ABadDescriptorOnOneRankFailsEveryRank) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  std::vector<float> storage(8, 1.0f);
  Descriptor<float, 1> d{storage.data(), storage.data(), 0, {8}, {1}};
  gradcomm_unranked_memref m = unranked(d);
  gradcomm_unranked_memref *passed = world.rank == 1 ? nullptr : &m;
  EXPECT_EQ(_mlir_ciface_gradcomm_rt_dense_all_reduce_f32("one-bad", passed,
                                                          GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "on rank 1 of " +
                                                  std::to_string(world.size) +
                                                  ": memref 'data' is null"))
      << gradcomm_last_error();
  EXPECT_EQ(storage, std::vector<float>(8, 1.0f));
}

} // namespace

namespace {

/// bfloat16 bits of a float that bfloat16 holds exactly, and back.
uint16_t toBfloat16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

float fromBfloat16(uint16_t half) {
  const uint32_t bits = static_cast<uint32_t>(half) << 16;
  float value = 0.0f;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

std::vector<float> widened(const std::vector<uint16_t> &halves) {
  std::vector<float> values(halves.size());
  for (size_t i = 0; i < halves.size(); ++i)
    values[i] = fromBfloat16(halves[i]);
  return values;
}

} // namespace

/// The sharded collectives of bf16 tensors match the pointer entry points
/// with a bfloat16 wire, on small integers (exact in bfloat16 and in any
/// order of the sums).
TEST(Memref, ShardedBfloat16MatchesTheWireEntryPoints) {
  World world;
  const int64_t count = 64 * world.size, k = 8;
  const int64_t length = count / world.size;
  std::vector<uint16_t> data(count);
  for (int64_t i = 0; i < count; ++i)
    data[i] = toBfloat16(static_cast<float>((i * 7 + world.rank) % 9) - 4.0f);
  const std::vector<float> wide = widened(data);
  std::vector<uint16_t> shard(length);
  Descriptor<uint16_t, 1> d{data.data(), data.data(), 0, {count}, {1}};
  Descriptor<uint16_t, 1> s{shard.data(), shard.data(), 0, {length}, {1}};
  gradcomm_unranked_memref dm = unranked(d), sm = unranked(s);

  std::vector<float> expected(length);
  ASSERT_OK(_mlir_ciface_gradcomm_rt_reduce_scatter_bf16(
      "memref.rs16", &dm, &sm, GRADCOMM_REDUCE_SUM));
  ASSERT_OK(gradcomm_reduce_scatter_wire_f32(
      "memref.rs16.p", wide.data(), expected.data(), count, GRADCOMM_WIRE_BF16,
      GRADCOMM_REDUCE_SUM));
  EXPECT_EQ(widened(shard), expected);

  const std::string viaMemref = uniqueName("m16"), viaPointer = uniqueName("p");
  gradcomm_scalecom_options o;
  gradcomm_scalecom_options_init(&o, k);
  o.warmup_steps = 1;
  o.wire = GRADCOMM_WIRE_BF16;
  o.momentum = 0.5f; // momentum correction reaches the runtime
  for (int step = 0; step < 3; ++step) {
    ASSERT_OK(_mlir_ciface_gradcomm_rt_scalecom_reduce_scatter_bf16(
        viaMemref.c_str(), &dm, &sm, k, GRADCOMM_SELECT_EXACT, 0, o.beta,
        o.warmup_steps, 0.0f, o.momentum, 0, 0, GRADCOMM_REDUCE_SUM));
    ASSERT_OK(gradcomm_scalecom_reduce_scatter_recipe_f32(
        viaPointer.c_str(), wide.data(), expected.data(), count, &o,
        GRADCOMM_REDUCE_SUM));
    EXPECT_EQ(widened(shard), expected) << "step " << step;
  }
  EXPECT_EQ(readState(viaMemref, count), readState(viaPointer, count));

  // The all-gather puts every rank's shard back in place.
  std::vector<uint16_t> whole(count);
  Descriptor<uint16_t, 1> w{whole.data(), whole.data(), 0, {count}, {1}};
  gradcomm_unranked_memref wm = unranked(w);
  std::vector<uint16_t> mine(data.begin() + world.rank * length,
                             data.begin() + (world.rank + 1) * length);
  Descriptor<uint16_t, 1> m{mine.data(), mine.data(), 0, {length}, {1}};
  gradcomm_unranked_memref mm = unranked(m);
  ASSERT_OK(_mlir_ciface_gradcomm_rt_all_gather_bf16("memref.ag16", &mm, &wm));
  for (int r = 0; r < world.size; ++r)
    for (int64_t i = 0; i < length; ++i)
      ASSERT_EQ(fromBfloat16(whole[r * length + i]),
                static_cast<float>(((r * length + i) * 7 + r) % 9) - 4.0f);
}
