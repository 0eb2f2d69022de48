// RUN: gradcomm-opt %s --gradcomm-scalecom | FileCheck %s

// SPMD steps as shard-partition leaves them: each gradient all-reduce feeds
// an SGD update of a same-typed function argument.

shard.grid @grid(shape = 4)

// Declarations stay at the top, after the grid, named after the parameter.
// CHECK:      shard.grid @grid
// CHECK-NEXT: gradcomm.state @sum_1d_arg0_grad : tensor<2048xf32>
// CHECK-NEXT: gradcomm.state @avg_2d_arg0_grad : tensor<32x64xf32>
// CHECK-NEXT: gradcomm.state @two_sizes_arg0_grad : tensor<4096xf32>
// CHECK-NEXT: gradcomm.state @two_sizes_arg1_grad : tensor<64x64xf32>
// CHECK-NOT:  gradcomm.state

// A sum stays a sum; default ratio 100 gives k = ceil(2048 / 100) = 21.
// CHECK-LABEL: func @sum_1d
// CHECK-SAME: (%[[W:.*]]: tensor<2048xf32>, %[[G:.*]]: tensor<2048xf32>)
// CHECK:      %[[V:.*]], %[[I:.*]] = gradcomm.cltk_compress %[[G]] state @sum_1d_arg0_grad on @grid grid_axes = [0] k = 21 selection = exact {warmup_steps = 100 : i64} : tensor<2048xf32> -> tensor<21xf32>, tensor<21xi64>
// CHECK-NEXT: %[[R:.*]] = gradcomm.sparse_all_reduce %[[V]], %[[I]] on @grid grid_axes = [0] reduction = sum {gradcomm.runtime_name = "sum_1d_arg0_grad_reduce"} : tensor<21xf32>, tensor<21xi64> -> tensor<2048xf32>
// CHECK-NEXT: gradcomm.memory_update %[[G]], %[[I]] state @sum_1d_arg0_grad beta = 5.000000e-01
// CHECK-NOT:  shard.all_reduce
// CHECK:      arith.subf %[[W]], %[[R]]
func.func @sum_1d(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = sum
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// An average stays an average; 2-D, through linalg elementwise ops.
// CHECK-LABEL: func @avg_2d
// CHECK:      gradcomm.cltk_compress %{{.*}} state @avg_2d_arg0_grad {{.*}} k = 21 selection = exact {warmup_steps = 100 : i64} : tensor<32x64xf32> -> tensor<21xf32>, tensor<21xi64>
// CHECK-NEXT: gradcomm.sparse_all_reduce {{.*}} reduction = average {gradcomm.runtime_name = "avg_2d_arg0_grad_reduce"} : tensor<21xf32>, tensor<21xi64> -> tensor<32x64xf32>
// CHECK-NEXT: gradcomm.memory_update
// CHECK-NOT:  shard.all_reduce
func.func @avg_2d(%w: tensor<32x64xf32>, %g: tensor<32x64xf32>, %lr: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<32x64xf32> -> tensor<32x64xf32>
  %e = tensor.empty() : tensor<32x64xf32>
  %s = linalg.mul ins(%r, %lr : tensor<32x64xf32>, tensor<32x64xf32>) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %u = linalg.sub ins(%w, %s : tensor<32x64xf32>, tensor<32x64xf32>) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %u : tensor<32x64xf32>
}

// Several gradients of different sizes: the two large ones are compressed
// (k = 41 and 41), the bias below min-elements (1024) stays dense.
// CHECK-LABEL: func @two_sizes
// CHECK:      gradcomm.cltk_compress %{{.*}} state @two_sizes_arg0_grad {{.*}} k = 41 {{.*}} : tensor<4096xf32>
// CHECK:      gradcomm.cltk_compress %{{.*}} state @two_sizes_arg1_grad {{.*}} k = 41 {{.*}} : tensor<64x64xf32>
// CHECK:      shard.all_reduce %{{.*}} reduction = average : tensor<64xf32> -> tensor<64xf32>
// CHECK-NOT:  gradcomm.cltk_compress
func.func @two_sizes(%w1: tensor<4096xf32>, %w2: tensor<64x64xf32>, %b: tensor<64xf32>,
                     %g1: tensor<4096xf32>, %g2: tensor<64x64xf32>, %gb: tensor<64xf32>)
    -> (tensor<4096xf32>, tensor<64x64xf32>, tensor<64xf32>) {
  %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = average
      : tensor<4096xf32> -> tensor<4096xf32>
  %r2 = shard.all_reduce %g2 on @grid grid_axes = [0] reduction = average
      : tensor<64x64xf32> -> tensor<64x64xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %u1 = arith.subf %w1, %r1 : tensor<4096xf32>
  %u2 = arith.subf %w2, %r2 : tensor<64x64xf32>
  %ub = arith.subf %b, %rb : tensor<64xf32>
  return %u1, %u2, %ub : tensor<4096xf32>, tensor<64x64xf32>, tensor<64xf32>
}
