//===- CudaTestUtil.h - When the GPU tests skip and when they fail --------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_TEST_CUDATESTUTIL_H
#define GRADCOMM_RUNTIME_TEST_CUDATESTUTIL_H

#include "MiniTest.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <unistd.h>
#include <vector>

/// 0 when CUDA sees a device. Otherwise 77 (ctest: skipped) only if the
/// machine has no NVIDIA GPU at all (no /dev/nvidia0, no driver in
/// /proc); a machine with one that CUDA cannot use (a driver too old for
/// this CUDA, a broken install, devices hidden) fails with 1 and the
/// cause, instead of reporting "skipped".
inline int requireCudaDevice(const char *tests) {
  int devices = 0;
  cudaError_t error = cudaGetDeviceCount(&devices);
  if (error == cudaSuccess && devices > 0)
    return 0;
  bool hardware = access("/dev/nvidia0", F_OK) == 0 ||
                  access("/proc/driver/nvidia/version", F_OK) == 0;
  if (!hardware) {
    std::printf("no NVIDIA GPU on this machine: %s skipped\n", tests);
    return 77;
  }
  std::printf("FAIL: this machine has an NVIDIA GPU but CUDA cannot use it "
              "(%s): %s not run\n",
              error == cudaSuccess ? "no device visible; CUDA_VISIBLE_DEVICES?"
                                   : cudaGetErrorString(error),
              tests);
  return 1;
}

/// Host copies of device floats and back (checked).
inline std::vector<float> toHost(const float *device, size_t n) {
  std::vector<float> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, 4 * n, cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

inline float *toDevice(const std::vector<float> &host) {
  float *device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, 4 * host.size()), cudaSuccess);
  EXPECT_EQ(
      cudaMemcpy(device, host.data(), 4 * host.size(), cudaMemcpyHostToDevice),
      cudaSuccess);
  return device;
}

#endif // GRADCOMM_RUNTIME_TEST_CUDATESTUTIL_H
