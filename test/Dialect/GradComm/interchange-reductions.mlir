// RUN: gradcomm-opt %s --pass-pipeline="builtin.module(func.func(gradcomm-interchange-reductions))" | FileCheck %s

// Reductions move just outside the output's last (parallel) dimension, so
// the innermost loop is a contiguous update; each output element still sums
// its terms in the same order.

#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>
#row = affine_map<(m, n) -> (m, n)>
#rowv = affine_map<(m, n) -> (m)>

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "reduction", "parallel"]}
func.func @matmul(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// A row reduction: the output's last dimension is the reduced row itself,
// nothing to gain; left as it is.
// CHECK-LABEL: func.func @row_sum
// CHECK: iterator_types = ["parallel", "reduction"]
func.func @row_sum(%a: memref<4x8xf32>, %c: memref<4xf32>) {
  linalg.generic {indexing_maps = [#row, #rowv], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<4x8xf32>) outs(%c : memref<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }
  return
}
