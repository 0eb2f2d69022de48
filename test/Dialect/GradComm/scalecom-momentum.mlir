// Momentum correction (docs/scalecom.md, "The recipe"): the runtime keeps
// every gradient's velocity, so the compressed weight's cltk_compress gets
// `momentum`, and the bias the policy keeps dense (fewer than min-elements)
// becomes the recipe's dense call (k = N, `dense`, no warm-up). Without the
// option the bias stays a dense shard.all_reduce.
// RUN: gradcomm-opt %s --gradcomm-scalecom="momentum=0.9 report=true" 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// RUN: gradcomm-opt %s --gradcomm-scalecom="momentum=0.5 nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: gradcomm-opt %s --gradcomm-scalecom 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not gradcomm-opt %s --gradcomm-scalecom="momentum=1" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not gradcomm-opt %s --gradcomm-scalecom="nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV-ALONE
// RUN: not gradcomm-opt %s --gradcomm-scalecom="compressor=local-topk momentum=0.9" 2>&1 | FileCheck %s --check-prefix=TOPK

shard.grid @grid(shape = 4)

// MOMENTUM: remark: gradcomm-scalecom: left dense (16 elements < min-elements (1024)), through the recipe's dense call for its velocity, state @b_grad
// MOMENTUM: gradcomm.state @w_grad : tensor<2048xf32>
// MOMENTUM: gradcomm.state @b_grad : tensor<16xf32>
// MOMENTUM-LABEL: func.func @sgd
// MOMENTUM: gradcomm.cltk_compress {{.*}} state @w_grad {{.*}} k = 21 selection = exact {momentum = 0.899999976 : f32, warmup_steps = 100 : i64}
// MOMENTUM: gradcomm.cltk_compress {{.*}} state @b_grad {{.*}} k = 16 selection = exact {dense, momentum = 0.899999976 : f32}
// MOMENTUM-NOT: shard.all_reduce
// NESTEROV: {momentum = 5.000000e-01 : f32, nesterov, warmup_steps = 100 : i64}
// NESTEROV: {dense, momentum = 5.000000e-01 : f32, nesterov}
// NONE-NOT: momentum
// NONE: shard.all_reduce {{.*}} : tensor<16xf32>
// RANGE: option 'momentum' must be in [0, 1), got 1
// NESTEROV-ALONE: option 'nesterov' needs 'momentum'
// TOPK: momentum correction is ScaleCom's recipe; compressor=local-topk does not take it
func.func @sgd(%w: tensor<2048xf32> {gradcomm.name = "w"}, %gw: tensor<2048xf32>,
               %b: tensor<16xf32> {gradcomm.name = "b"}, %gb: tensor<16xf32>)
    -> (tensor<2048xf32>, tensor<16xf32>) {
  %rw = shard.all_reduce %gw on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %nw = arith.subf %w, %rw : tensor<2048xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<16xf32> -> tensor<16xf32>
  %nb = arith.subf %b, %rb : tensor<16xf32>
  return %nw, %nb : tensor<2048xf32>, tensor<16xf32>
}
