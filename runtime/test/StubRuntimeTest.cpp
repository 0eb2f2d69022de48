//===- StubRuntimeTest.cpp - The runtime over the one-process MPI stub ----===//
//
// Part of the GradComm project.
//
// The GPU machine runs the runtime against runtime/mpi-stub (it has no
// MPI); this checks, on the CPU and wherever the stub build is made
// (bench/gpu/run.sh, also its dry run), that the CPU backend works there as
// it does at one rank under MPICH: ScaleCom against the kernels it is made
// of, dense and gossip as identities, a checkpoint round trip, and a clear
// error from the consistency check rather than a hang or a crash.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "MiniTest.h"
#include "TestCommon.h"

#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace gradcomm::test;

namespace {

TEST(StubRuntime, ScaleComIsTheKernelsAtOneRank) {
  const int64_t n = 10000, k = 100;
  std::vector<float> memory(n, 0.0f);
  gradcomm::cpu::SelectScratch scratch;
  for (uint64_t step = 0; step < 4; ++step) {
    std::vector<float> grad = gradient(1, 0, step, n), out(n, 7.0f);
    ASSERT_OK(gradcomm_scalecom_f32("m", grad.data(), out.data(), n, k,
                                    GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                    GRADCOMM_REDUCE_AVERAGE));
    // One rank: out is p = m + g at the top-k of |p|, zero elsewhere.
    std::vector<int64_t> indices(k);
    gradcomm::cpu::selectExact(memory.data(), grad.data(), n, k, indices.data(),
                               scratch);
    std::vector<float> values(k), expected(n, 0.0f);
    gradcomm::cpu::gatherAndUpdate(memory.data(), grad.data(), n,
                                   indices.data(), k, 0.5f, values.data(),
                                   nullptr);
    for (int64_t j = 0; j < k; ++j)
      expected[indices[j]] = values[j];
    EXPECT_EQ(out, expected) << "step " << step;
    std::vector<float> state(n);
    ASSERT_OK(gradcomm_state_read("m", state.data(), n));
    EXPECT_EQ(state, memory) << "step " << step;
  }
}

TEST(StubRuntime, DenseGossipAndCheckpoint) {
  std::vector<float> x = gradient(2, 0, 0, 1000), y = x;
  ASSERT_OK(gradcomm_dense_all_reduce_f32("d", y.data(), 1000,
                                          GRADCOMM_REDUCE_AVERAGE));
  EXPECT_EQ(y, x);
  ASSERT_OK(gradcomm_gossip_exchange_f32("g", y.data(), 1000,
                                         GRADCOMM_SCHEDULE_RING, 0.5f, 0, 1));
  EXPECT_EQ(y, x);
  const std::string path = ::testing::TempDir() + "gradcomm_stub_checkpoint";
  std::vector<float> before(10000), after(10000);
  ASSERT_OK(gradcomm_state_read("m", before.data(), 10000));
  ASSERT_OK(gradcomm_state_save(path.c_str()));
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_state_restore(path.c_str()));
  ASSERT_OK(gradcomm_state_read("m", after.data(), 10000));
  EXPECT_EQ(after, before);
  std::remove(path.c_str());
}

/// The one-sided ops over the stub's windows: one rank has no peer to
/// gossip with, and its elastic exchange with the center follows the
/// formula (the center starts at the replica).
TEST(StubRuntime, AsynchronousOps) {
  std::vector<float> x = gradient(3, 0, 0, 100), y = x;
  ASSERT_OK(gradcomm_gossip_async_f32("ag", y.data(), 100,
                                      GRADCOMM_SCHEDULE_RANDOM, 0.5f, 0, 1));
  EXPECT_EQ(y, x);
  ASSERT_OK(gradcomm_elastic_average_async_f32("ae", y.data(), 100, 0.5f, 1));
  EXPECT_EQ(y, x); // the center is the replica: no force
  std::vector<float> moved = x, center(100);
  for (float &v : moved)
    v = v + 1.0f;
  y = moved;
  ASSERT_OK(gradcomm_elastic_average_async_f32("ae", y.data(), 100, 0.5f, 1));
  ASSERT_OK(gradcomm_state_read("ae", center.data(), 100));
  for (int i = 0; i < 100; ++i) {
    float elastic = 0.5f * (moved[i] - x[i]);
    EXPECT_EQ(y[i], moved[i] - elastic) << i;
    EXPECT_EQ(center[i], x[i] + elastic) << i;
  }
}

TEST(StubRuntime, BadInputIsAClearError) {
  std::vector<float> g(100), out(100);
  EXPECT_EQ(gradcomm_scalecom_f32("bad", g.data(), out.data(), 100, 101,
                                  GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                  GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(std::string(gradcomm_last_error()).find("rank 0 of 1") !=
              std::string::npos)
      << gradcomm_last_error();
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int failed = RUN_ALL_TESTS();
  gradcomm_finalize();
  MPI_Finalize();
  return failed;
}
