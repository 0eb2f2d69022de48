//===- ScaleComTest.cpp - ScaleCom runtime against a C++ reference --------===//
//
// Part of the GradComm project.
//
// Every rank can compute every rank's gradient (TestUtil.h), so the
// reference below simulates all n workers of docs/design/architecture.md
// section 2 in each process and the runtime's result on this rank is compared
// with it: memories bit for bit (they are rank-local, same formula), reduced
// outputs to float tolerance (MPI may sum in another order than the reference).
//
//===----------------------------------------------------------------------===//

#include "ScaleComReference.h"
#include "TestUtil.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <numeric>

using namespace gradcomm::test;

namespace {

void expectNear(const std::vector<float> &got,
                const std::vector<float> &expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], 1e-5f * (1.0f + std::fabs(expected[i])))
        << "element " << i;
}

struct Config {
  gradcomm_selection selection;
  int64_t chunkSize;
  float beta;
  gradcomm_reduction reduction;
};

class ScaleComReference : public ::testing::TestWithParam<Config> {};

TEST_P(ScaleComReference, TwentyStepsMatchTheReference) {
  World world;
  const Config config = GetParam();
  const int64_t count = 1000;
  const int64_t k = config.selection == GRADCOMM_SELECT_CHUNK
                        ? (count + config.chunkSize - 1) / config.chunkSize
                        : 50;
  std::string name = uniqueName("w");
  Reference reference(world.size, count, k, config.selection, config.chunkSize,
                      config.beta, config.reduction);
  for (uint64_t step = 0; step < 20; ++step) {
    std::vector<std::vector<float>> grads;
    for (int r = 0; r < world.size; ++r)
      grads.push_back(gradient(42, r, step, count));
    std::vector<float> out(count, -1.0f);
    ASSERT_OK(gradcomm_scalecom_f32(
        name.c_str(), grads[world.rank].data(), out.data(), count, k,
        config.selection, config.chunkSize, config.beta, config.reduction));
    std::vector<float> expected = reference.run(grads);
    ASSERT_EQ(readState(name, count), reference.memory[world.rank])
        << "step " << step;
    expectNear(out, expected);
    // All-reduce SGD keeps replicas bit-identical.
    ASSERT_TRUE(sameOnAllRanks(out)) << "step " << step;
  }
  uint64_t step = 0;
  EXPECT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 20u);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ScaleComReference,
    ::testing::Values(
        Config{GRADCOMM_SELECT_EXACT, 0, 1.0f, GRADCOMM_REDUCE_AVERAGE},
        Config{GRADCOMM_SELECT_EXACT, 0, 0.5f, GRADCOMM_REDUCE_AVERAGE},
        Config{GRADCOMM_SELECT_CHUNK, 20, 1.0f, GRADCOMM_REDUCE_SUM},
        Config{GRADCOMM_SELECT_CHUNK, 33, 0.3f, GRADCOMM_REDUCE_AVERAGE}));

TEST(ScaleCom, LeaderRotatesZeroToNMinusOne) {
  World world;
  const int64_t count = 64;
  std::string name = uniqueName("w");
  // Rank r's gradient is large only at position 8r + 1, so the selected
  // index names the leader.
  std::vector<float> grad(count, 0.0f);
  grad[8 * world.rank + 1] = 1.0f + world.rank;
  for (uint64_t step = 0; step < 2u * world.size + 1; ++step) {
    std::vector<float> out(count);
    ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(),
                                    count, 1, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                    GRADCOMM_REDUCE_SUM));
    int64_t expectedLeader = static_cast<int64_t>(step % world.size);
    int64_t selected = std::max_element(out.begin(), out.end(),
                                        [](float a, float b) {
                                          return std::fabs(a) < std::fabs(b);
                                        }) -
                       out.begin();
    EXPECT_EQ(selected, 8 * expectedLeader + 1) << "step " << step;
  }
}

TEST(ScaleCom, KEqualsNIsExactlyDenseAllReduce) {
  World world;
  const int64_t count = 513;
  std::string name = uniqueName("w");
  for (uint64_t step = 0; step < 5; ++step) {
    std::vector<float> grad = gradient(9, world.rank, step, count);
    std::vector<float> dense = grad, out(count);
    ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(),
                                    count, count, GRADCOMM_SELECT_EXACT, 0,
                                    0.5f, GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_dense_all_reduce_f32("dense", dense.data(), count,
                                            GRADCOMM_REDUCE_AVERAGE));
    EXPECT_EQ(out, dense) << "step " << step;
    EXPECT_EQ(readState(name, count), std::vector<float>(count, 0.0f));
  }
}

TEST(ScaleCom, SingleRankIsErrorFeedbackTopk) {
  World world;
  if (world.size != 1)
    GTEST_SKIP() << "n = 1 only";
  const int64_t count = 300, k = 7;
  std::string name = uniqueName("w");
  std::vector<float> memory(count, 0.0f);
  for (uint64_t step = 0; step < 6; ++step) {
    std::vector<float> grad = gradient(10, 0, step, count), out(count);
    ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(),
                                    count, k, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                    GRADCOMM_REDUCE_AVERAGE));
    std::vector<float> p(count);
    for (int64_t i = 0; i < count; ++i)
      p[i] = memory[i] + grad[i];
    std::vector<int64_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::fabs(p[a]) > std::fabs(p[b]);
    });
    std::vector<float> expected(count, 0.0f);
    for (int64_t j = 0; j < k; ++j)
      expected[order[j]] = p[order[j]];
    EXPECT_EQ(out, expected);
    for (int64_t i = 0; i < count; ++i)
      memory[i] = p[i] - expected[i];
    EXPECT_EQ(readState(name, count), memory);
  }
}

// Indices that fit in the agreement's payload (k * width <= 256 bytes)
// ride in it; with the agreement off they are broadcast. Both give the
// same outputs and memories, bit for bit, for exact selection (int32
// indices) and chunk selection (1- and 2-byte offsets; the chunk leader
// then selects before the agreement and updates in the gather's pass), in
// the fused step and in the unfused compress.
TEST(ScaleCom, FoldedIndicesMatchTheBroadcast) {
  World world;
  struct Case {
    int64_t count, k;
    gradcomm_selection selection;
    int64_t chunk;
  };
  const std::vector<Case> cases = {
      {3000, 64, GRADCOMM_SELECT_EXACT, 0},    // 256 bytes: folded
      {3000, 30, GRADCOMM_SELECT_CHUNK, 100},  // 1-byte offsets
      {90000, 90, GRADCOMM_SELECT_CHUNK, 1000} // 2-byte offsets
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case &x = cases[c];
    const std::string folded = uniqueName("folded" + std::to_string(c));
    const std::string sent = uniqueName("sent" + std::to_string(c));
    for (uint64_t step = 0; step < 5; ++step) { // every rank leads once
      std::vector<float> grad = gradient(60 + c, world.rank, step, x.count);
      std::vector<float> a(x.count), b(x.count);
      gradcomm_op_stats before{}, after{};
      gradcomm_stats_get(folded.c_str(), &before);
      ASSERT_OK(gradcomm_scalecom_f32(folded.c_str(), grad.data(), a.data(),
                                      x.count, x.k, x.selection, x.chunk, 0.5f,
                                      GRADCOMM_REDUCE_AVERAGE));
      ASSERT_OK(gradcomm_stats_get(folded.c_str(), &after));
      EXPECT_EQ(after.messages - before.messages, 1u) << "case " << c;
      ASSERT_OK(gradcomm_set_consistency_check(0));
      ASSERT_OK(gradcomm_scalecom_f32(sent.c_str(), grad.data(), b.data(),
                                      x.count, x.k, x.selection, x.chunk, 0.5f,
                                      GRADCOMM_REDUCE_AVERAGE));
      ASSERT_OK(gradcomm_set_consistency_check(1));
      EXPECT_EQ(a, b) << "case " << c << " step " << step;
      EXPECT_EQ(readState(folded, x.count), readState(sent, x.count))
          << "case " << c << " step " << step;
    }
  }
  // The unfused compress folds too: the same indices and values.
  const int64_t count = 3000, k = 64;
  const std::string folded = uniqueName("cfolded"), sent = uniqueName("csent");
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<float> grad = gradient(70, world.rank, step, count);
    std::vector<float> va(k), vb(k);
    std::vector<int64_t> ia(k), ib(k);
    ASSERT_OK(gradcomm_cltk_compress_f32(folded.c_str(), grad.data(), count, k,
                                         GRADCOMM_SELECT_EXACT, 0, va.data(),
                                         ia.data()));
    ASSERT_OK(gradcomm_set_consistency_check(0));
    ASSERT_OK(gradcomm_cltk_compress_f32(sent.c_str(), grad.data(), count, k,
                                         GRADCOMM_SELECT_EXACT, 0, vb.data(),
                                         ib.data()));
    ASSERT_OK(gradcomm_set_consistency_check(1));
    EXPECT_EQ(ia, ib) << "step " << step;
    EXPECT_EQ(va, vb) << "step " << step;
    ASSERT_OK(gradcomm_memory_update_f32(folded.c_str(), grad.data(), count,
                                         ia.data(), k, 1.0f));
    ASSERT_OK(gradcomm_memory_update_f32(sent.c_str(), grad.data(), count,
                                         ib.data(), k, 1.0f));
  }
}

TEST(ScaleCom, UnfusedOpsEqualTheFusedStep) {
  World world;
  const int64_t count = 777, k = 40;
  std::string fused = uniqueName("fused"), unfused = uniqueName("unfused");
  for (uint64_t step = 0; step < 6; ++step) {
    std::vector<float> grad = gradient(11, world.rank, step, count);
    std::vector<float> outFused(count), outUnfused(count), values(k);
    std::vector<int64_t> indices(k);
    ASSERT_OK(gradcomm_scalecom_f32(fused.c_str(), grad.data(), outFused.data(),
                                    count, k, GRADCOMM_SELECT_EXACT, 0, 0.25f,
                                    GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_cltk_compress_f32(unfused.c_str(), grad.data(), count, k,
                                         GRADCOMM_SELECT_EXACT, 0,
                                         values.data(), indices.data()));
    ASSERT_TRUE(std::is_sorted(indices.begin(), indices.end()));
    ASSERT_OK(gradcomm_sparse_all_reduce_f32(
        "sar", values.data(), indices.data(), k, outUnfused.data(), count,
        GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_memory_update_f32(unfused.c_str(), grad.data(), count,
                                         indices.data(), k, 0.25f));
    EXPECT_EQ(outFused, outUnfused);
    EXPECT_EQ(readState(fused, count), readState(unfused, count));
  }
}

// The unfused ops with the value all-reduce started: two tensors'
// compressions, both reductions in flight (their values and indices
// overwritten at once), waited for in reverse order, then the memory
// updates: the fused step's outputs and memories, bit for bit.
TEST(ScaleCom, StartedSparseAllReduceMatchesTheFusedStep) {
  World world;
  const std::vector<int64_t> counts = {777, 64}, ks = {40, 64};
  auto name = [](const char *form, size_t t) {
    return uniqueName(form + std::to_string(t));
  };
  for (uint64_t step = 0; step < 4; ++step) {
    std::vector<std::vector<float>> grads(2), outs(2), values(2);
    std::vector<std::vector<int64_t>> indices(2);
    std::vector<gradcomm_request> requests(2, nullptr);
    for (size_t t = 0; t < 2; ++t) {
      grads[t] = gradient(21 + t, world.rank, step, counts[t]);
      outs[t].assign(counts[t], 7.0f);
      values[t].resize(ks[t]);
      indices[t].resize(ks[t]);
      ASSERT_OK(gradcomm_cltk_compress_f32(
          name("unfused", t).c_str(), grads[t].data(), counts[t], ks[t],
          GRADCOMM_SELECT_EXACT, 0, values[t].data(), indices[t].data()));
      std::vector<int64_t> kept = indices[t];
      ASSERT_OK(gradcomm_sparse_all_reduce_start_f32(
          "sar.started", values[t].data(), indices[t].data(), ks[t],
          outs[t].data(), counts[t], GRADCOMM_REDUCE_AVERAGE, &requests[t]));
      ASSERT_NE(requests[t], nullptr);
      std::fill(values[t].begin(), values[t].end(), -1.0f);
      std::fill(indices[t].begin(), indices[t].end(), int64_t(0));
      indices[t] = kept; // for the memory update below
    }
    for (size_t t = 2; t-- > 0;) {
      ASSERT_OK(gradcomm_wait(&requests[t]));
      ASSERT_OK(gradcomm_memory_update_f32(name("unfused", t).c_str(),
                                           grads[t].data(), counts[t],
                                           indices[t].data(), ks[t], 0.25f));
      std::vector<float> fused(counts[t]);
      ASSERT_OK(gradcomm_scalecom_f32(
          name("fused", t).c_str(), grads[t].data(), fused.data(), counts[t],
          ks[t], GRADCOMM_SELECT_EXACT, 0, 0.25f, GRADCOMM_REDUCE_AVERAGE));
      EXPECT_EQ(outs[t], fused) << "tensor " << t << " step " << step;
      EXPECT_EQ(readState(name("unfused", t), counts[t]),
                readState(name("fused", t), counts[t]));
    }
  }
  gradcomm_op_stats stats{};
  ASSERT_OK(gradcomm_stats_get("sar.started", &stats));
  EXPECT_EQ(stats.calls, 8u);
  // A repeated index fails at the start, on every rank, with nothing
  // started.
  std::vector<float> values = {1.0f, 2.0f}, out(4, 7.0f);
  std::vector<int64_t> repeated = {1, 1};
  gradcomm_request request = nullptr;
  EXPECT_EQ(gradcomm_sparse_all_reduce_start_f32(
                "sar.bad", values.data(), repeated.data(), 2, out.data(), 4,
                GRADCOMM_REDUCE_SUM, &request),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(request, nullptr);
  EXPECT_EQ(out, std::vector<float>(4, 7.0f));
  // An op without a name is counted under "", as the blocking form does.
  std::vector<int64_t> distinct = {0, 3};
  ASSERT_OK(gradcomm_sparse_all_reduce_start_f32(
      nullptr, values.data(), distinct.data(), 2, out.data(), 4,
      GRADCOMM_REDUCE_SUM, &request));
  ASSERT_OK(gradcomm_wait(&request));
  const float n = static_cast<float>(world.size);
  EXPECT_EQ(out, (std::vector<float>{n, 0.0f, 0.0f, 2.0f * n}));
}

TEST(ScaleCom, SparseAllReduceRefusesRepeatedIndices) {
  // Indices in any order are fine; a repeated one is refused on every rank
  // (the scatter's result would depend on the order of the writes).
  World world;
  std::vector<float> values = {1.0f, 2.0f, 3.0f}, out(10, 7.0f);
  std::vector<int64_t> shuffled = {5, 1, 8};
  EXPECT_OK(gradcomm_sparse_all_reduce_f32("sar.order", values.data(),
                                           shuffled.data(), 3, out.data(), 10,
                                           GRADCOMM_REDUCE_AVERAGE));
  EXPECT_EQ(out[8], 3.0f);
  std::vector<int64_t> repeated = {5, 1, 5};
  std::fill(out.begin(), out.end(), 7.0f);
  EXPECT_EQ(gradcomm_sparse_all_reduce_f32("sar.repeat", values.data(),
                                           repeated.data(), 3, out.data(), 10,
                                           GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(gradcomm_last_error(), "index 5 appears more than once"))
      << gradcomm_last_error();
  EXPECT_EQ(out, std::vector<float>(10, 7.0f));
}

// The started form: three tensors (exact and chunk selection, sum and
// mean) started one after the other, so each one's selection runs while the
// previous one's values are in flight, and waited for in reverse order,
// give the blocking form's bits: outputs, memories and step counters.
TEST(ScaleCom, StartedCallsMatchBlocking) {
  World world;
  struct Tensor {
    int64_t count, k;
    gradcomm_selection selection;
    int64_t chunk;
    gradcomm_reduction reduction;
  };
  const std::vector<Tensor> tensors = {
      {777, 40, GRADCOMM_SELECT_EXACT, 0, GRADCOMM_REDUCE_AVERAGE},
      {1000, 100, GRADCOMM_SELECT_CHUNK, 10, GRADCOMM_REDUCE_SUM},
      {5, 5, GRADCOMM_SELECT_EXACT, 0, GRADCOMM_REDUCE_SUM}};
  for (uint64_t step = 0; step < 4; ++step) {
    std::vector<std::vector<float>> started(tensors.size());
    std::vector<gradcomm_request> requests(tensors.size(), nullptr);
    for (size_t t = 0; t < tensors.size(); ++t) {
      const Tensor &x = tensors[t];
      std::vector<float> grad = gradient(15 + t, world.rank, step, x.count);
      started[t].assign(x.count, 7.0f);
      ASSERT_OK(gradcomm_scalecom_start_f32(
          uniqueName("started" + std::to_string(t)).c_str(), grad.data(),
          started[t].data(), x.count, x.k, x.selection, x.chunk, 0.5f,
          x.reduction, &requests[t]));
      ASSERT_NE(requests[t], nullptr);
      // The gradient may be reused at once.
      std::fill(grad.begin(), grad.end(), -1.0f);
    }
    for (size_t t = tensors.size(); t-- > 0;) {
      const Tensor &x = tensors[t];
      ASSERT_OK(gradcomm_wait(&requests[t]));
      std::vector<float> grad = gradient(15 + t, world.rank, step, x.count);
      std::vector<float> blocking(x.count);
      const std::string name = uniqueName("blocking" + std::to_string(t));
      ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(),
                                      blocking.data(), x.count, x.k,
                                      x.selection, x.chunk, 0.5f, x.reduction));
      EXPECT_EQ(started[t], blocking) << "tensor " << t << " step " << step;
      EXPECT_EQ(readState(uniqueName("started" + std::to_string(t)), x.count),
                readState(name, x.count));
    }
  }
  uint64_t steps = 0;
  ASSERT_OK(gradcomm_state_step(uniqueName("started0").c_str(), &steps));
  EXPECT_EQ(steps, 4u);
  gradcomm_op_stats stats{};
  ASSERT_OK(gradcomm_stats_get(uniqueName("started1").c_str(), &stats));
  EXPECT_EQ(stats.calls, 4u);
}

// While a started call holds its state, the state cannot be used, reset,
// restored or finalized; after the wait all of that works again.
TEST(ScaleCom, AStartedCallHoldsItsState) {
  World world;
  const int64_t count = 300, k = 30;
  const std::string name = uniqueName("held");
  std::vector<float> grad = gradient(16, world.rank, 0, count), out(count),
                     other(count);
  gradcomm_request request = nullptr;
  ASSERT_OK(gradcomm_scalecom_start_f32(name.c_str(), grad.data(), out.data(),
                                        count, k, GRADCOMM_SELECT_EXACT, 0,
                                        1.0f, GRADCOMM_REDUCE_SUM, &request));
  EXPECT_EQ(gradcomm_scalecom_f32(name.c_str(), grad.data(), other.data(),
                                  count, k, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_SUM),
            GRADCOMM_ERR_STATE);
  EXPECT_TRUE(
      contains(gradcomm_last_error(), "has a started call not waited for yet"))
      << gradcomm_last_error();
  EXPECT_EQ(gradcomm_state_reset(name.c_str()), GRADCOMM_ERR_STATE);
  EXPECT_EQ(gradcomm_finalize(), GRADCOMM_ERR_STATE);
  EXPECT_TRUE(contains(gradcomm_last_error(),
                       "1 started call(s) not waited for; gradcomm_wait for "
                       "them before finalizing"))
      << gradcomm_last_error();
  ASSERT_OK(gradcomm_wait(&request));
  ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), other.data(),
                                  count, k, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_SUM));
  ASSERT_OK(gradcomm_state_reset(name.c_str()));
}

TEST(ScaleCom, NonFiniteGradientSkipsTheStepOnEveryRank) {
  World world;
  const int64_t count = 200, k = 10;
  std::string name = uniqueName("w");
  std::vector<float> out(count);
  std::vector<float> grad = gradient(12, world.rank, 0, count);
  ASSERT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), count,
                                  k, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE));
  std::vector<float> memoryBefore = readState(name, count);
  grad = gradient(12, world.rank, 1, count);
  if (world.rank == world.size - 1)
    grad[5] = std::nanf("");
  std::fill(out.begin(), out.end(), 3.0f);
  EXPECT_EQ(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), count,
                                  k, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_NON_FINITE);
  EXPECT_TRUE(
      contains(gradcomm_last_error(),
               "non-finite input on rank " + std::to_string(world.size - 1)))
      << gradcomm_last_error();
  EXPECT_EQ(readState(name, count), memoryBefore);
  EXPECT_EQ(out, std::vector<float>(count, 3.0f));
  uint64_t step = 0;
  EXPECT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 1u);
}

TEST(ScaleCom, MismatchedRanksGetAnErrorNotAHang) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs two ranks";
  std::string name = uniqueName("w");
  const int64_t count = world.rank == 1 ? 100 : 101;
  std::vector<float> grad(count, 1.0f), out(count);
  EXPECT_EQ(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), count,
                                  5, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_MISMATCH);
  EXPECT_TRUE(contains(gradcomm_last_error(), "ranks disagree on count"))
      << gradcomm_last_error();
  std::string other = uniqueName("beta");
  float beta = world.rank == 0 ? 0.5f : 1.0f;
  EXPECT_EQ(gradcomm_scalecom_f32(other.c_str(), grad.data(), out.data(), 100,
                                  5, GRADCOMM_SELECT_EXACT, 0, beta,
                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_MISMATCH);
  EXPECT_TRUE(contains(gradcomm_last_error(), "ranks disagree on beta"));
}

TEST(ScaleCom, ConsistencyCheckCanBeSwitchedOff) {
  World world;
  std::string name = uniqueName("w");
  std::vector<float> grad = gradient(13, world.rank, 0, 100), out(100);
  ASSERT_OK(gradcomm_set_consistency_check(0));
  EXPECT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), 100,
                                  10, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE));
  ASSERT_OK(gradcomm_set_consistency_check(1));
  EXPECT_TRUE(sameOnAllRanks(out));
}

TEST(ScaleCom, LocalErrorsNameOpRankAndCause) {
  World world;
  std::string name = uniqueName("w");
  std::vector<float> grad(100, 1.0f), out(100);
  // Every rank fails the same way: all report rank 0's message.
  const std::string where = "on rank 0 of " + std::to_string(world.size);
  struct Case {
    gradcomm_status status;
    std::string message;
  };
  auto call = [&](const char *state, const float *g, float *o, int64_t count,
                  int64_t k, int selection, int64_t chunk, float beta,
                  int reduction) -> Case {
    gradcomm_status status = gradcomm_scalecom_f32(
        state, g, o, count, k, static_cast<gradcomm_selection>(selection),
        chunk, beta, static_cast<gradcomm_reduction>(reduction));
    return {status, gradcomm_last_error()};
  };
  const char *s = name.c_str();
  const std::vector<std::pair<Case, std::string>> cases = {
      {call(nullptr, grad.data(), out.data(), 100, 5, 0, 0, 1, 1),
       "'state' is null or empty"},
      {call(s, nullptr, out.data(), 100, 5, 0, 0, 1, 1), "'grad' is null"},
      {call(s, grad.data(), nullptr, 100, 5, 0, 0, 1, 1), "'out' is null"},
      {call(s, grad.data(), out.data(), 0, 5, 0, 0, 1, 1),
       "'count' must be in [1, "},
      {call(s, grad.data(), out.data(), 100, 0, 0, 0, 1, 1),
       "'k' must be in [1, 100], got 0"},
      {call(s, grad.data(), out.data(), 100, 101, 0, 0, 1, 1),
       "'k' must be in [1, 100], got 101"},
      {call(s, grad.data(), out.data(), 100, 5, 0, 0, 0.0f, 1),
       "'beta' must be in (0, 1]"},
      {call(s, grad.data(), out.data(), 100, 5, 0, 0, 1.5f, 1),
       "'beta' must be in (0, 1]"},
      {call(s, grad.data(), out.data(), 100, 5, 9, 0, 1, 1),
       "unknown selection 9"},
      {call(s, grad.data(), out.data(), 100, 5, 1, 0, 1, 1),
       "'chunk_size' must be in [1, 100], got 0"},
      {call(s, grad.data(), out.data(), 100, 5, 1, 10, 1, 1),
       "'k' must be ceil(count / chunk_size) = 10 with chunk selection, got 5"},
      {call(s, grad.data(), out.data(), 100, 5, 0, 0, 1, 4),
       "unknown reduction 4"},
      {call(s, grad.data(), grad.data() + 50, 100, 5, 0, 0, 1, 1),
       "'grad' and 'out' overlap"},
  };
  for (const auto &[got, cause] : cases) {
    EXPECT_EQ(got.status, GRADCOMM_ERR_INVALID_ARGUMENT) << got.message;
    EXPECT_TRUE(contains(got.message, "gradcomm: scalecom_f32")) << got.message;
    EXPECT_TRUE(contains(got.message, where)) << got.message;
    EXPECT_TRUE(contains(got.message, cause))
        << got.message << " (expected: " << cause << ")";
  }
  // A state used with another size.
  ASSERT_OK(gradcomm_state_declare(s, 50));
  EXPECT_EQ(gradcomm_scalecom_f32(s, grad.data(), out.data(), 100, 5,
                                  GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_STATE);
  EXPECT_TRUE(contains(gradcomm_last_error(), "state '" + name +
                                                  "' has 50 elements, the call "
                                                  "passes 100"));
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

std::string rankFile(const std::string &path) {
  World world;
  return path + ".rank" + std::to_string(world.rank);
}

/// A checkpoint path for one test, with nothing left at it from an earlier
/// run (a left-over previous generation would change what restore takes).
std::string checkpointPath(const std::string &tag) {
  World world;
  std::string path = ::testing::TempDir() + "gradcomm_" + tag + "_np" +
                     std::to_string(world.size);
  for (const char *suffix : {"", ".prev", ".tmp"})
    std::remove((rankFile(path) + suffix).c_str());
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

std::string readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
}

void writeFile(const std::string &path, const std::string &data) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(data.data(), static_cast<std::streamsize>(data.size()));
}

uint64_t fnv1a(const std::string &data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::vector<std::vector<float>> runSteps(const std::string &name,
                                         uint64_t first, uint64_t last) {
  World world;
  std::vector<std::vector<float>> outs;
  for (uint64_t step = first; step < last; ++step) {
    std::vector<float> grad = gradient(14, world.rank, step, 300), out(300);
    EXPECT_OK(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), 300,
                                    30, GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                    GRADCOMM_REDUCE_AVERAGE));
    outs.push_back(out);
  }
  return outs;
}

TEST(Checkpoint, RestoreAndContinueIsBitIdentical) {
  std::string name = uniqueName("w");
  std::string path = checkpointPath("roundtrip");
  runSteps(name, 0, 10);
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  std::vector<std::vector<float>> uninterrupted = runSteps(name, 10, 20);
  std::vector<float> finalMemory = readState(name, 300);

  ASSERT_OK(gradcomm_state_restore(path.c_str()));
  uint64_t step = 0;
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 10u);
  std::vector<std::vector<float>> resumed = runSteps(name, 10, 20);
  EXPECT_EQ(resumed, uninterrupted);
  EXPECT_EQ(readState(name, 300), finalMemory);
  std::remove(rankFile(path).c_str());
}

TEST(Checkpoint, BadFilesAreRejectedAndChangeNothing) {
  std::string name = uniqueName("w");
  std::string path = checkpointPath("bad");
  runSteps(name, 0, 3);
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  std::string good = readFile(rankFile(path));
  ASSERT_GT(good.size(), 64u);
  runSteps(name, 3, 5);
  std::vector<float> liveMemory = readState(name, 300);

  auto expectRejected = [&](const std::string &data, const std::string &why) {
    writeFile(rankFile(path), data);
    EXPECT_EQ(gradcomm_state_restore(path.c_str()), GRADCOMM_ERR_IO) << why;
    EXPECT_TRUE(contains(gradcomm_last_error(), why))
        << gradcomm_last_error() << " (expected: " << why << ")";
    EXPECT_EQ(readState(name, 300), liveMemory);
    uint64_t step = 0;
    EXPECT_OK(gradcomm_state_step(name.c_str(), &step));
    EXPECT_EQ(step, 5u);
  };
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  expectRejected(flipped, "checksum mismatch");
  expectRejected(good.substr(0, good.size() / 2), "checksum mismatch");
  expectRejected("GCSTATE", "not a GradComm state file");
  expectRejected(std::string(100, 'x'), "not a GradComm state file");

  // A file written by another rank / group size, checksum made valid.
  std::string otherSize = good;
  uint32_t size = 0;
  std::memcpy(&size, otherSize.data() + 16, sizeof(size));
  size += 1;
  std::memcpy(otherSize.data() + 16, &size, sizeof(size));
  uint64_t checksum = fnv1a(otherSize, otherSize.size() - 8);
  std::memcpy(otherSize.data() + otherSize.size() - 8, &checksum, 8);
  expectRejected(otherSize, "written by rank");

  // Another format version.
  std::string otherVersion = good;
  otherVersion[8] = 9;
  checksum = fnv1a(otherVersion, otherVersion.size() - 8);
  std::memcpy(otherVersion.data() + otherVersion.size() - 8, &checksum, 8);
  expectRejected(otherVersion, "format version 9");

  std::remove(rankFile(path).c_str());
  EXPECT_EQ(gradcomm_state_restore(path.c_str()), GRADCOMM_ERR_IO);
  EXPECT_TRUE(contains(gradcomm_last_error(), "cannot open"));
}

TEST(Checkpoint, DuplicatedEntryIsRejectedEvenWithAValidChecksum) {
  World world;
  std::string name = uniqueName("w");
  std::string path = checkpointPath("duplicate");
  ASSERT_OK(gradcomm_state_declare(name.c_str(), 1));
  // magic, version 1, rank, size, two states, the same entry twice.
  std::string data("GCSTATE\0", 8);
  auto put = [&](const void *bytes, size_t size) {
    data.append(static_cast<const char *>(bytes), size);
  };
  uint32_t version = 1, rank = world.rank, size = world.size;
  uint64_t states = 2, step = 7, count = 1;
  float value = 1.5f;
  put(&version, 4);
  put(&rank, 4);
  put(&size, 4);
  put(&states, 8);
  for (int i = 0; i < 2; ++i) {
    uint32_t length = static_cast<uint32_t>(name.size());
    put(&length, 4);
    put(name.data(), name.size());
    put(&step, 8);
    put(&count, 8);
    put(&value, 4);
  }
  uint64_t checksum = fnv1a(data, data.size());
  put(&checksum, 8);
  writeFile(rankFile(path), data);
  EXPECT_EQ(gradcomm_state_restore(path.c_str()), GRADCOMM_ERR_IO);
  EXPECT_TRUE(contains(gradcomm_last_error(), "appears twice"))
      << gradcomm_last_error();
  uint64_t live = 99;
  EXPECT_OK(gradcomm_state_step(name.c_str(), &live));
  EXPECT_EQ(live, 0u);
  std::remove(rankFile(path).c_str());
}

TEST(Checkpoint, ADirectoryAtThePathIsRefusedByName) {
  std::string path = checkpointPath("directory");
  ASSERT_EQ(::mkdir(rankFile(path).c_str(), 0755), 0);
  EXPECT_EQ(gradcomm_state_save(path.c_str()), GRADCOMM_ERR_IO);
  // Every rank reports the lowest failing rank's message (rank 0's file).
  EXPECT_TRUE(contains(gradcomm_last_error(),
                       path + ".rank0' exists and is not a regular file"))
      << gradcomm_last_error();
  EXPECT_EQ(gradcomm_state_restore(path.c_str()), GRADCOMM_ERR_IO);
  EXPECT_TRUE(contains(gradcomm_last_error(), "is not a regular file"))
      << gradcomm_last_error();
  ::rmdir(rankFile(path).c_str());
  // Nothing left behind by the failed save.
  EXPECT_NE(::access((rankFile(path) + ".tmp").c_str(), F_OK), 0);
}

TEST(Checkpoint, SaveLeavesNoTemporaryFile) {
  std::string name = uniqueName("w");
  std::string path = checkpointPath("temporary");
  ASSERT_OK(gradcomm_state_declare(name.c_str(), 3));
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  EXPECT_EQ(::access(rankFile(path).c_str(), F_OK), 0);
  EXPECT_NE(::access((rankFile(path) + ".tmp").c_str(), F_OK), 0);
  std::remove(rankFile(path).c_str());
}

TEST(Checkpoint, RestoreTakesTheNewestGenerationCompleteOnEveryRank) {
  World world;
  std::string name = uniqueName("w");
  std::string path = checkpointPath("generations");
  std::remove(rankFile(path).c_str());
  std::remove((rankFile(path) + ".prev").c_str());
  runSteps(name, 0, 3);
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  uint64_t first = 0, second = 0, restored = 0, step = 0;
  ASSERT_OK(gradcomm_state_generation(&first));
  runSteps(name, 3, 5);
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  ASSERT_OK(gradcomm_state_generation(&second));
  EXPECT_EQ(second, first + 1);
  // The previous generation is kept beside the new one.
  EXPECT_EQ(::access((rankFile(path) + ".prev").c_str(), F_OK), 0);

  // Everyone complete: the newest generation (step 5).
  runSteps(name, 5, 6);
  ASSERT_OK(gradcomm_state_restore(path.c_str()));
  ASSERT_OK(gradcomm_state_generation(&restored));
  EXPECT_EQ(restored, second);
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 5u);

  // A save that crashed on the last rank between its two renames: that
  // rank still has only the first generation. Every rank takes the first
  // generation (step 3), not a mix of the two.
  if (world.rank == world.size - 1)
    ASSERT_EQ(
        std::rename((rankFile(path) + ".prev").c_str(), rankFile(path).c_str()),
        0);
  ASSERT_OK(gradcomm_state_restore(path.c_str()));
  ASSERT_OK(gradcomm_state_generation(&restored));
  EXPECT_EQ(restored, first);
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 3u);
  std::remove(rankFile(path).c_str());
  std::remove((rankFile(path) + ".prev").c_str());
}

TEST(Checkpoint, ACorruptNewestFileOnOneRankFallsBackEverywhere) {
  World world;
  std::string name = uniqueName("w");
  std::string path = checkpointPath("fallback");
  std::remove(rankFile(path).c_str());
  std::remove((rankFile(path) + ".prev").c_str());
  runSteps(name, 0, 2);
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  runSteps(name, 2, 4);
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  if (world.rank == 0) {
    std::string data = readFile(rankFile(path));
    data[data.size() / 2] ^= 0x10;
    writeFile(rankFile(path), data);
  }
  ASSERT_OK(gradcomm_state_restore(path.c_str()));
  uint64_t step = 0;
  ASSERT_OK(gradcomm_state_step(name.c_str(), &step));
  EXPECT_EQ(step, 2u);
  std::remove(rankFile(path).c_str());
  std::remove((rankFile(path) + ".prev").c_str());
}

TEST(Checkpoint, StateOfAnotherSizeIsRejected) {
  std::string name = uniqueName("w");
  std::string path = checkpointPath("size");
  ASSERT_OK(gradcomm_state_declare(name.c_str(), 10));
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  // A fresh registry where the same name is live with 11 elements.
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_init());
  ASSERT_OK(gradcomm_state_declare(name.c_str(), 11));
  EXPECT_EQ(gradcomm_state_restore(path.c_str()), GRADCOMM_ERR_IO);
  EXPECT_TRUE(
      contains(gradcomm_last_error(), "has 10 elements in the file, 11 live"))
      << gradcomm_last_error();
  std::remove(rankFile(path).c_str());
}

TEST(State, DeclareResetAndErrors) {
  std::string name = uniqueName("w");
  ASSERT_OK(gradcomm_state_declare(name.c_str(), 4));
  ASSERT_OK(gradcomm_state_declare(name.c_str(), 4));
  EXPECT_EQ(gradcomm_state_declare(name.c_str(), 5), GRADCOMM_ERR_STATE);
  EXPECT_EQ(gradcomm_state_declare("", 5), GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(gradcomm_state_declare("x", -1), GRADCOMM_ERR_INVALID_ARGUMENT);
  runSteps(uniqueName("r"), 0, 2);
  uint64_t step = 0;
  ASSERT_OK(gradcomm_state_step(uniqueName("r").c_str(), &step));
  EXPECT_EQ(step, 2u);
  ASSERT_OK(gradcomm_state_reset(uniqueName("r").c_str()));
  ASSERT_OK(gradcomm_state_step(uniqueName("r").c_str(), &step));
  EXPECT_EQ(step, 0u);
  EXPECT_EQ(readState(uniqueName("r"), 300), std::vector<float>(300, 0.0f));
  EXPECT_EQ(gradcomm_state_reset("no such state"), GRADCOMM_ERR_STATE);
  EXPECT_EQ(gradcomm_state_step("no such state", &step), GRADCOMM_ERR_STATE);
  EXPECT_OK(gradcomm_state_reset(nullptr));
}

} // namespace
