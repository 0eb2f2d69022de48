/*===- blas.h - Matrix products of compiled code --------------------------===
 *
 * Part of the GradComm project.
 *
 * libgradcomm_blas: the matrix products that gradcomm-convert-linalg-to-blas
 * hands compiled steps' float32 products to. A library of its own, beside
 * the communication runtime and independent of it: compiled code links
 * both (gradcomm-compile --emit=shared, gradcomm_compile_step). C, no LLVM.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GRADCOMM_BLAS_H
#define GRADCOMM_BLAS_H

#ifdef __cplusplus
extern "C" {
#endif

/* C[i] += A[i] B[i] for every i: float32 matrices as rank-3 strided memref
 * descriptors {allocated, aligned, offset, sizes[3], strides[3]} of extents
 * (batch, m, k), (batch, k, n) and (batch, m, n), the form MLIR passes to a
 * function declared with llvm.emit_c_interface. Each matrix is row-major or
 * column-major within its batch (one of its last two strides 1); C must not
 * overlap A or B. Serial OpenBLAS sgemm: the same bits on every run. A
 * layout BLAS cannot take stops the process naming the operand (the
 * compiler only emits layouts it accepts). Host memory. */
void _mlir_ciface_gradcomm_blas_matmul_f32(void *a, void *b, void *c);

#ifdef __cplusplus
}
#endif

#endif /* GRADCOMM_BLAS_H */
