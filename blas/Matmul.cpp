//===- Matmul.cpp - Matrix products of compiled code, through BLAS --------===//
//
// Part of the GradComm project.
//
// gradcomm-convert-linalg-to-blas turns the matrix-product loop nests of a
// compiled step (linear layers, im2col convolutions, attention) into calls
// of this function. A loop nest sums each output in one float chain and
// streams its operands from memory once per output row; a blocked BLAS
// kernel keeps tiles in cache and registers (docs/performance.md, "Stock
// models").
//
// OpenBLAS, serial: the ranks of a job already take a core each, and a
// single-threaded product gives the same bits on every run.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/blas.h"

#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace {

/// A rank-3 strided memref descriptor of f32, as MLIR passes it to a
/// function declared with `llvm.emit_c_interface`.
struct Matrices {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
};

/// One operand of cblas_sgemm: its first element of batch `b`, whether it
/// is stored transposed, and its leading dimension.
struct BlasOperand {
  const Matrices *m;
  CBLAS_TRANSPOSE transpose = CblasNoTrans;
  int64_t leading = 1;

  float *at(int64_t batch) const {
    return m->aligned + m->offset + batch * m->strides[0];
  }
};

[[noreturn]] void refuse(const char *operand, const Matrices *m,
                         const char *why) {
  std::fprintf(stderr,
               "gradcomm: gradcomm_blas_matmul_f32: operand %s (%lld x %lld x "
               "%lld, strides %lld, %lld, %lld) %s; this is a compiler bug "
               "(gradcomm-convert-linalg-to-blas checks layouts)\n",
               operand, static_cast<long long>(m->sizes[0]),
               static_cast<long long>(m->sizes[1]),
               static_cast<long long>(m->sizes[2]),
               static_cast<long long>(m->strides[0]),
               static_cast<long long>(m->strides[1]),
               static_cast<long long>(m->strides[2]), why);
  std::abort();
}

/// Row-major (unit column stride) or column-major (unit row stride) with a
/// leading dimension BLAS accepts; a dimension of extent 1 may carry any
/// stride.
BlasOperand blasOperand(const char *name, const Matrices *m) {
  int64_t rows = m->sizes[1], cols = m->sizes[2];
  BlasOperand operand{m};
  if (m->strides[2] == 1 || cols == 1) {
    operand.leading = rows == 1 ? std::max<int64_t>(cols, 1) : m->strides[1];
    if (operand.leading >= std::max<int64_t>(cols, 1))
      return operand;
  }
  if (m->strides[1] == 1 || rows == 1) {
    operand.transpose = CblasTrans;
    operand.leading = cols == 1 ? std::max<int64_t>(rows, 1) : m->strides[2];
    if (operand.leading >= std::max<int64_t>(rows, 1))
      return operand;
  }
  refuse(name, m, "has neither unit row nor unit column stride");
}

bool fitsInt(int64_t value) { return value >= 0 && value <= 0x7fffffff; }

} // namespace

void _mlir_ciface_gradcomm_blas_matmul_f32(void *a, void *b, void *c) {
  const auto *lhs = static_cast<const Matrices *>(a);
  const auto *rhs = static_cast<const Matrices *>(b);
  const auto *out = static_cast<const Matrices *>(c);
  int64_t batch = out->sizes[0], m = out->sizes[1], n = out->sizes[2];
  int64_t k = lhs->sizes[2];
  if (lhs->sizes[0] != batch || rhs->sizes[0] != batch || lhs->sizes[1] != m ||
      rhs->sizes[1] != k || rhs->sizes[2] != n)
    refuse("A", lhs, "does not match B and C in shape");
  if (!fitsInt(m) || !fitsInt(n) || !fitsInt(k))
    refuse("C", out, "has an extent BLAS cannot index");
  if (batch == 0 || m == 0 || n == 0 || k == 0)
    return;
  BlasOperand x = blasOperand("A", lhs), y = blasOperand("B", rhs),
              z = blasOperand("C", out);
  // C column-major: C^T += B^T A^T, row-major.
  bool swap = z.transpose == CblasTrans;
  auto flip = [](CBLAS_TRANSPOSE t) {
    return t == CblasTrans ? CblasNoTrans : CblasTrans;
  };
  for (int64_t i = 0; i < batch; ++i) {
    if (!swap)
      cblas_sgemm(CblasRowMajor, x.transpose, y.transpose, m, n, k, 1.0f,
                  x.at(i), x.leading, y.at(i), y.leading, 1.0f, z.at(i),
                  z.leading);
    else
      cblas_sgemm(CblasRowMajor, flip(y.transpose), flip(x.transpose), n, m, k,
                  1.0f, y.at(i), y.leading, x.at(i), x.leading, 1.0f, z.at(i),
                  z.leading);
  }
}
