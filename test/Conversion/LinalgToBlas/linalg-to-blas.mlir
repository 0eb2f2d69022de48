// RUN: gradcomm-opt %s --convert-linalg-to-blas="min-multiply-adds=64" --split-input-file | FileCheck %s

// Float32 matrix products become calls of libgradcomm_blas's kernel, each
// operand a rank-3 strided view in (batch, row, column) order; everything
// else stays a loop nest.

#mk = affine_map<(m, n, k) -> (m, k)>
#km = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @plain
// CHECK-SAME: (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x16xf32>, %[[C:.*]]: memref<4x16xf32> {llvm.noalias})
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[A3:.*]] = memref.expand_shape %[[A]] {{\[}}[0, 1], [2]] output_shape [1, 4, 8]
// CHECK-DAG: %[[B3:.*]] = memref.expand_shape %[[B]] {{\[}}[0, 1], [2]] output_shape [1, 8, 16]
// CHECK-DAG: %[[C3:.*]] = memref.expand_shape %[[C]] {{\[}}[0, 1], [2]] output_shape [1, 4, 16]
// CHECK-DAG: %[[AC:.*]] = memref.cast %[[A3]] : memref<1x4x8xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK-DAG: %[[BC:.*]] = memref.cast %[[B3]]
// CHECK-DAG: %[[CC:.*]] = memref.cast %[[C3]]
// CHECK: call @gradcomm_blas_matmul_f32(%[[AC]], %[[BC]], %[[CC]])
// CHECK: func.func private @gradcomm_blas_matmul_f32(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
func.func @plain(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32> {llvm.noalias}) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Transposed operands become column-major views (memref.transpose), the
// product's operands in either order, the sum in either order.
#km = affine_map<(m, n, k) -> (k, m)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @transposed
// CHECK-SAME: (%[[A:.*]]: memref<8x4xf32>, %[[B:.*]]: memref<16x8xf32>
// CHECK-DAG: %[[AT:.*]] = memref.transpose %[[A]] (d0, d1) -> (d1, d0) : memref<8x4xf32> to memref<4x8xf32, strided<[1, 4]>>
// CHECK-DAG: %[[BT:.*]] = memref.transpose %[[B]] (d0, d1) -> (d1, d0) : memref<16x8xf32> to memref<8x16xf32, strided<[1, 8]>>
// CHECK-DAG: memref.expand_shape %[[AT]]
// CHECK-DAG: memref.expand_shape %[[BT]]
// CHECK: call @gradcomm_blas_matmul_f32
// CHECK-NOT: linalg.generic
func.func @transposed(%a: memref<8x4xf32>, %b: memref<16x8xf32>) -> memref<4x16xf32> {
  %c = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [#km, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x4xf32>, memref<16x8xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %y, %x : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  }
  return %c : memref<4x16xf32>
}

// -----

// A batch dimension stays the views' first: no expand_shape.
#a = affine_map<(b, m, n, k) -> (b, m, k)>
#b = affine_map<(b, m, n, k) -> (b, k, n)>
#c = affine_map<(b, m, n, k) -> (b, m, n)>

// CHECK-LABEL: func.func @batched
// CHECK-NOT: memref.expand_shape
// CHECK: %[[AC:.*]] = memref.cast %{{.*}} : memref<3x4x8xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: call @gradcomm_blas_matmul_f32(%[[AC]]
func.func @batched(%a: memref<3x4x8xf32>, %b: memref<3x8x16xf32>, %c: memref<3x4x16xf32> {llvm.noalias}) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x4x8xf32>, memref<3x8x16xf32>) outs(%c : memref<3x4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left as loops: a product below min-multiply-adds (2x2x2 = 8 terms), an
// output that may alias an input (an argument without llvm.noalias), a
// float64 sum, a body that is not one multiply-add, the batch dimension
// innermost in memory (no BLAS layout), two reduction dimensions, and an
// extent past 32 bits.
#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @small
// CHECK: linalg.generic
// CHECK-NOT: call
func.func @small(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %c: memref<2x2xf32> {llvm.noalias}) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%c : memref<2x2xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @may_alias
// CHECK: linalg.generic
// CHECK-NOT: call
func.func @may_alias(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @wide
// CHECK: linalg.generic
// CHECK-NOT: call
func.func @wide(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf64> {llvm.noalias}) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf64>) {
  ^bb0(%x: f32, %y: f32, %acc: f64):
    %xw = arith.extf %x : f32 to f64
    %yw = arith.extf %y : f32 to f64
    %p = arith.mulf %xw, %yw : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  }
  return
}

// CHECK-LABEL: func.func @not_multiply_add
// CHECK: linalg.generic
// CHECK-NOT: call
func.func @not_multiply_add(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32> {llvm.noalias}) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.maximumf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

#ab = affine_map<(b, m, n, k) -> (m, k, b)>
#bb = affine_map<(b, m, n, k) -> (b, k, n)>
#cb = affine_map<(b, m, n, k) -> (b, m, n)>

// CHECK-LABEL: func.func @batch_innermost
// CHECK: linalg.generic
// CHECK-NOT: call
func.func @batch_innermost(%a: memref<4x8x3xf32>, %b: memref<3x8x16xf32>, %c: memref<3x4x16xf32> {llvm.noalias}) {
  linalg.generic {indexing_maps = [#ab, #bb, #cb], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8x3xf32>, memref<3x8x16xf32>) outs(%c : memref<3x4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

#x = affine_map<(m, n, k, l) -> (m, k, l)>
#w = affine_map<(m, n, k, l) -> (k, l, n)>
#o = affine_map<(m, n, k, l) -> (m, n)>

// CHECK-LABEL: func.func @two_reductions
// CHECK: linalg.generic
// CHECK-NOT: call
func.func @two_reductions(%a: memref<4x8x2xf32>, %b: memref<8x2x16xf32>, %c: memref<4x16xf32> {llvm.noalias}) {
  linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<4x8x2xf32>, memref<8x2x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// An extent past 32 bits (BLAS indexes with int) stays a loop nest.
// CHECK-LABEL: func.func @huge
// CHECK: linalg.generic
// CHECK-NOT: call
func.func @huge(%a: memref<2x2147483648xf32>, %b: memref<2147483648x2xf32>, %c: memref<2x2xf32> {llvm.noalias}) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x2147483648xf32>, memref<2147483648x2xf32>) outs(%c : memref<2x2xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
