//===- CudaGroupTest.cpp - Groups of grid axes on the CUDA backend --------===//
//
// Part of the GradComm project.
//
// Four ranks as a 2x2 grid, one GPU each: the dense all-reduce and the
// fused ScaleCom step over each axis on the CUDA backend (one NCCL
// communicator per group, ncclCommSplit) give the CPU backend's bits, for
// a group made before the backend started and one made after. Skipped (77)
// on a machine with fewer GPUs than ranks (NCCL puts one rank on a
// device); fails when a GPU is there but CUDA cannot use it.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "MiniTest.h"
#include "TestCommon.h"

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <vector>

using namespace gradcomm::test;

namespace {

constexpr int64_t kCount = 30000, kK = 300;

/// Dense all-reduce and two ScaleCom steps over axis `axis` of the 2x2
/// grid, on the backend that is selected; the outputs, then the memory.
std::vector<std::vector<float>> runInGroup(int32_t axis, bool device) {
  const int64_t shape[2] = {2, 2};
  gradcomm_group group = nullptr;
  EXPECT_OK(gradcomm_group_from_grid(shape, 2, &axis, 1, &group));
  EXPECT_OK(gradcomm_group_use(group));
  int rank = 0;
  gradcomm_rank(&rank);
  std::vector<std::vector<float>> results;
  std::vector<float> dense = gradient(21, rank, 0, kCount);
  if (device) {
    float *d = toDevice(dense);
    EXPECT_OK(gradcomm_dense_all_reduce_f32("dense", d, kCount,
                                            GRADCOMM_REDUCE_AVERAGE));
    dense = toHost(d, kCount);
    cudaFree(d);
  } else {
    EXPECT_OK(gradcomm_dense_all_reduce_f32("dense", dense.data(), kCount,
                                            GRADCOMM_REDUCE_AVERAGE));
  }
  results.push_back(dense);
  for (uint64_t step = 0; step < 2; ++step) {
    std::vector<float> grad = gradient(22, rank, step, kCount), out(kCount);
    if (device) {
      float *g = toDevice(grad), *o = toDevice(out);
      EXPECT_OK(gradcomm_scalecom_f32("w", g, o, kCount, kK,
                                      GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                      GRADCOMM_REDUCE_AVERAGE));
      out = toHost(o, kCount);
      cudaFree(g);
      cudaFree(o);
    } else {
      EXPECT_OK(gradcomm_scalecom_f32("w", grad.data(), out.data(), kCount, kK,
                                      GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                      GRADCOMM_REDUCE_AVERAGE));
    }
    results.push_back(out);
  }
  std::vector<float> memory(kCount);
  EXPECT_OK(gradcomm_state_read("w", memory.data(), kCount));
  results.push_back(memory);
  EXPECT_OK(gradcomm_group_use(nullptr));
  return results;
}

} // namespace

TEST(CudaGroup, EachAxisMatchesTheCpuBackend) {
  for (int32_t axis : {0, 1}) {
    ASSERT_OK(gradcomm_finalize());
    auto cpu = runInGroup(axis, false);
    // A group made after the CUDA backend started...
    ASSERT_OK(gradcomm_finalize());
    ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
    EXPECT_EQ(runInGroup(axis, true), cpu) << "axis " << axis;
    // ... and one made before it: split when the backend starts.
    ASSERT_OK(gradcomm_finalize());
    const int64_t shape[2] = {2, 2};
    gradcomm_group group = nullptr;
    ASSERT_OK(gradcomm_group_from_grid(shape, 2, &axis, 1, &group));
    ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
    EXPECT_EQ(runInGroup(axis, true), cpu) << "axis " << axis << ", early";
  }
  ASSERT_OK(gradcomm_finalize());
}

int main(int argc, char **argv) {
  if (int rc = requireCudaDevice("CUDA group tests"))
    return rc;
  MPI_Init(&argc, &argv);
  int size = 0, rank = 0, devices = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cudaGetDeviceCount(&devices);
  if (size != 4 || devices < size) {
    if (rank == 0)
      std::printf("CUDA group tests need 4 ranks and a GPU each (%d ranks, "
                  "%d GPUs): skipped\n",
                  size, devices);
    MPI_Finalize();
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS();
  gradcomm_finalize();
  MPI_Finalize();
  return failed;
}
