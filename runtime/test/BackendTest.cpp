//===- BackendTest.cpp - Backend selection on any machine -----------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

using namespace gradcomm::test;

namespace {

TEST(Backend, CpuIsTheDefault) {
  gradcomm_backend backend = GRADCOMM_BACKEND_CUDA;
  ASSERT_OK(gradcomm_get_backend(&backend));
  EXPECT_EQ(backend, GRADCOMM_BACKEND_CPU);
}

TEST(Backend, SwitchingWithLiveStateIsRefused) {
  ASSERT_OK(gradcomm_state_declare(uniqueName("w").c_str(), 4));
  EXPECT_EQ(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA),
            GRADCOMM_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(
      contains(gradcomm_last_error(), "cannot switch backends with live state"))
      << gradcomm_last_error();
  EXPECT_EQ(gradcomm_set_backend(static_cast<gradcomm_backend>(5)),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

TEST(Backend, CudaEitherStartsOrSaysWhyNot) {
  // A fresh runtime (no state). On a machine without a GPU the answer must
  // be a clear GRADCOMM_ERR_UNSUPPORTED, and the CPU backend stays usable.
  ASSERT_OK(gradcomm_finalize());
  gradcomm_status status = gradcomm_set_backend(GRADCOMM_BACKEND_CUDA);
  if (status == GRADCOMM_OK) {
    ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CPU));
  } else {
    EXPECT_EQ(status, GRADCOMM_ERR_UNSUPPORTED);
    EXPECT_TRUE(contains(gradcomm_last_error(), "cuda backend") ||
                contains(gradcomm_last_error(), "CUDA backend"))
        << gradcomm_last_error();
    // One failure on every rank, with the same message: the lowest failing
    // rank's (each rank's own would name its own rank).
    std::string message = gradcomm_last_error();
    std::vector<float> bytes(message.begin(), message.end());
    EXPECT_TRUE(sameOnAllRanks(bytes)) << message;
    EXPECT_TRUE(contains(message, "on rank 0 of")) << message;
  }
  gradcomm_backend backend = GRADCOMM_BACKEND_CUDA;
  ASSERT_OK(gradcomm_get_backend(&backend));
  EXPECT_EQ(backend, GRADCOMM_BACKEND_CPU);
  float x = 2.0f;
  EXPECT_OK(
      gradcomm_dense_all_reduce_f32("after", &x, 1, GRADCOMM_REDUCE_AVERAGE));
  EXPECT_EQ(x, 2.0f);
}

} // namespace
