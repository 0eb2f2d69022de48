//===- MatmulTest.cpp - The matrix products of compiled code --------------===//
//
// Part of the GradComm project.
//
// gradcomm_blas_matmul_f32 against a float64 sum in every layout, the same
// bits on every call, and empty extents.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/blas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

/// MLIR's ranked descriptor layout (StridedMemRefType<T, N>).
template <typename T, int N> struct Descriptor {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

/// One batch of matrices inside `storage`, `rows x cols`, row-major or
/// column-major, each batch `batchStride` apart, padded (leading dimension
/// larger than needed) so that writes outside the view are caught.
Descriptor<float, 3> matrices(std::vector<float> &storage, int64_t offset,
                              int64_t batch, int64_t rows, int64_t cols,
                              bool columnMajor) {
  int64_t leading = (columnMajor ? rows : cols) + 3;
  int64_t batchStride = leading * (columnMajor ? cols : rows) + 5;
  storage.assign(offset + batch * batchStride, -7.0f);
  Descriptor<float, 3> d{
      storage.data(),
      storage.data(),
      offset,
      {batch, rows, cols},
      {batchStride, columnMajor ? 1 : leading, columnMajor ? leading : 1}};
  return d;
}

float &element(Descriptor<float, 3> &d, int64_t b, int64_t i, int64_t j) {
  return d.aligned[d.offset + b * d.strides[0] + i * d.strides[1] +
                   j * d.strides[2]];
}

} // namespace

TEST(Blas, MatmulAccumulatesInEveryLayout) {
  const int64_t batch = 2, m = 5, n = 7, k = 33;
  for (int layout = 0; layout < 8; ++layout) {
    std::vector<float> sa, sb, sc;
    auto a = matrices(sa, 2, batch, m, k, layout & 1);
    auto b = matrices(sb, 0, batch, k, n, layout & 2);
    auto c = matrices(sc, 1, batch, m, n, layout & 4);
    std::vector<double> expected(batch * m * n);
    for (int64_t t = 0; t < batch; ++t) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p)
          element(a, t, i, p) =
              static_cast<float>((i * 7 + p * 3 + t) % 11) / 8.0f - 0.6f;
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j)
          element(b, t, p, j) =
              static_cast<float>((p * 5 + j * 2 + t) % 13) / 16.0f - 0.4f;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          element(c, t, i, j) = static_cast<float>(i - j);
          double sum = i - j;
          for (int64_t p = 0; p < k; ++p)
            sum +=
                static_cast<double>(element(a, t, i, p)) * element(b, t, p, j);
          expected[(t * m + i) * n + j] = sum;
        }
    }
    std::vector<float> inputs = sa;
    inputs.insert(inputs.end(), sb.begin(), sb.end());
    std::vector<float> before = sc;
    _mlir_ciface_gradcomm_blas_matmul_f32(&a, &b, &c);
    for (int64_t t = 0; t < batch; ++t)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = expected[(t * m + i) * n + j];
          EXPECT_NEAR(element(c, t, i, j), want, 1e-5 * (1.0 + std::abs(want)))
              << "layout " << layout << " at " << t << "," << i << "," << j;
          element(c, t, i, j) = -7.0f;
          before[&element(c, t, i, j) - sc.data()] = -7.0f;
        }
    // Nothing outside C's view was written, nothing of A and B.
    EXPECT_EQ(sc, before) << "layout " << layout;
    std::vector<float> after = sa;
    after.insert(after.end(), sb.begin(), sb.end());
    EXPECT_EQ(after, inputs) << "layout " << layout;
  }
}

TEST(Blas, MatmulGivesTheSameBitsEveryCall) {
  std::vector<float> sa, sb, sc1, sc2;
  auto a = matrices(sa, 0, 1, 64, 300, false);
  auto b = matrices(sb, 0, 1, 300, 48, true);
  auto c1 = matrices(sc1, 0, 1, 64, 48, false);
  auto c2 = matrices(sc2, 0, 1, 64, 48, false);
  for (size_t i = 0; i < sa.size(); ++i)
    sa[i] = std::sin(static_cast<float>(i));
  for (size_t i = 0; i < sb.size(); ++i)
    sb[i] = std::cos(static_cast<float>(i));
  _mlir_ciface_gradcomm_blas_matmul_f32(&a, &b, &c1);
  _mlir_ciface_gradcomm_blas_matmul_f32(&a, &b, &c2);
  EXPECT_EQ(0, std::memcmp(sc1.data(), sc2.data(), sc1.size() * 4));
  // And the product is there (the padding stays -7).
  EXPECT_NE(sc1[0], -7.0f);
}

TEST(Blas, MatmulWithAnEmptyExtentLeavesTheOutput) {
  std::vector<float> sa, sb, sc;
  auto a = matrices(sa, 0, 1, 3, 0, false);
  auto b = matrices(sb, 0, 1, 0, 4, false);
  auto c = matrices(sc, 0, 1, 3, 4, false);
  std::vector<float> before = sc;
  _mlir_ciface_gradcomm_blas_matmul_f32(&a, &b, &c);
  EXPECT_EQ(sc, before);
}
