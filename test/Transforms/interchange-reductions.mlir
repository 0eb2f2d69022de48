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
// CHECK-DAG: #[[CONV_IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d2 + d4, d5 + d6)>
// CHECK-DAG: #[[CONV_OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d6)>
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

// A stride-1 convolution: the input window `ow + kw` walks memory with unit
// step along ow, so the reductions (c, kh, kw) move outside ow.
#conv_in = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh + kh, ow + kw)>
#conv_w = affine_map<(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#conv_out = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
// CHECK-LABEL: func.func @conv
// CHECK: linalg.generic {indexing_maps = [#[[CONV_IN]], #{{.*}}, #[[CONV_OUT]]]
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]
func.func @conv(%x: memref<2x3x10x10xf32>, %w: memref<4x3x3x3xf32>, %y: memref<2x4x8x8xf32>) {
  linalg.generic {indexing_maps = [#conv_in, #conv_w, #conv_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<2x3x10x10xf32>, memref<4x3x3x3xf32>) outs(%y : memref<2x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// The weight gradient of a 3x3 convolution: the output's last dimension
// (kw) is 3 long, too short to vectorize, so the 3x3 taps (kh, kw) go
// innermost instead: nine outputs accumulate side by side, each over
// (n, oh, ow) in the same order as before.
#wg_g = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#wg_x = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#wg_out = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>
// CHECK-LABEL: func.func @conv_weight_grad
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "parallel", "parallel"]
func.func @conv_weight_grad(%g: memref<2x4x8x8xf32>, %x: memref<2x3x10x10xf32>, %dw: memref<4x3x3x3xf32>) {
  linalg.generic {indexing_maps = [#wg_g, #wg_x, #wg_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%g, %x : memref<2x4x8x8xf32>, memref<2x3x10x10xf32>) outs(%dw : memref<4x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// The same with a reduction of 2 x 2 x 2 = 8 terms: too short to be worth
// it; left as it is.
// CHECK-LABEL: func.func @short_weight_grad
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
func.func @short_weight_grad(%g: memref<2x4x2x2xf32>, %x: memref<2x3x4x4xf32>, %dw: memref<4x3x3x3xf32>) {
  linalg.generic {indexing_maps = [#wg_g, #wg_x, #wg_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%g, %x : memref<2x4x2x2xf32>, memref<2x3x4x4xf32>) outs(%dw : memref<4x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
