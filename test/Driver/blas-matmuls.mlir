// A float32 matrix product goes to the runtime's BLAS kernel by default
// (convert-linalg-to-blas); --blas-matmuls=false keeps it a loop nest.

// RUN: gradcomm-compile %s -o - --emit=llvm --strategy=dense | FileCheck %s --check-prefix=BLAS
// BLAS: call void @_mlir_ciface_gradcomm_blas_matmul_f32(
// BLAS: declare void @_mlir_ciface_gradcomm_blas_matmul_f32(ptr, ptr, ptr)

// RUN: gradcomm-compile %s -o - --emit=llvm --strategy=dense --blas-matmuls=false | FileCheck %s --check-prefix=LOOPS
// LOOPS-NOT: gradcomm_blas_matmul_f32
// LOOPS: fmul
// LOOPS-NOT: gradcomm_blas_matmul_f32

#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>

func.func @step(%x: tensor<16x32xf32>, %w: tensor<32x16xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<16x32xf32>, tensor<32x16xf32>) outs(%init : tensor<16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
