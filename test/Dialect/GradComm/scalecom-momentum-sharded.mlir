// Momentum correction on a sharded step (docs/scalecom.md, "Sharded
// training"): the compressed reduce-scatter's cltk_compress gets
// `momentum`, as the all-reduce's does, and the reduce-scatter the policy
// keeps dense (fewer than min-elements) becomes the recipe's dense call
// (k = N, `dense`, no warm-up) feeding a sparse_reduce_scatter, so the
// runtime keeps every gradient's velocity. Without the option the bias
// stays a dense shard.reduce_scatter.
// RUN: gradcomm-opt %s --gradcomm-scalecom="momentum=0.9 report=true" 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// RUN: gradcomm-opt %s --gradcomm-scalecom 2>&1 | FileCheck %s --check-prefix=NONE

shard.grid @grid(shape = 4)

// MOMENTUM: remark: gradcomm-scalecom: left dense (16 elements < min-elements (1024)), through the recipe's dense call for its velocity, state @b_grad
// MOMENTUM: gradcomm.state @w_grad : tensor<64x64xf32>
// MOMENTUM: gradcomm.state @b_grad : tensor<16xf32>
// MOMENTUM-LABEL: func.func @sharded_sgd
// MOMENTUM: gradcomm.cltk_compress {{.*}} state @w_grad {{.*}} k = 41 selection = exact {momentum = 0.899999976 : f32, warmup_steps = 100 : i64}
// MOMENTUM: gradcomm.sparse_reduce_scatter {{.*}} -> tensor<16x64xf32>
// MOMENTUM: gradcomm.cltk_compress {{.*}} state @b_grad {{.*}} k = 16 selection = exact {dense, momentum = 0.899999976 : f32}
// MOMENTUM: gradcomm.sparse_reduce_scatter {{.*}} -> tensor<4xf32>
// MOMENTUM-NOT: shard.reduce_scatter
// NONE-NOT: momentum
// NONE: shard.reduce_scatter {{.*}} : tensor<16xf32> -> tensor<4xf32>
func.func @sharded_sgd(%w: tensor<16x64xf32> {gradcomm.name = "w"},
                       %gw: tensor<64x64xf32>,
                       %b: tensor<4xf32> {gradcomm.name = "b"},
                       %gb: tensor<16xf32>)
    -> (tensor<16x64xf32>, tensor<4xf32>) {
  %rw = shard.reduce_scatter %gw on @grid grid_axes = [0] reduction = average
      scatter_axis = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
  %nw = arith.subf %w, %rw : tensor<16x64xf32>
  %rb = shard.reduce_scatter %gb on @grid grid_axes = [0] reduction = average
      scatter_axis = 0 : tensor<16xf32> -> tensor<4xf32>
  %nb = arith.subf %b, %rb : tensor<4xf32>
  return %nw, %nb : tensor<16x64xf32>, tensor<4xf32>
}
