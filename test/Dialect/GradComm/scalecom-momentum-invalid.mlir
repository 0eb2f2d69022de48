// Momentum correction refuses what would lose or double the momentum
// (docs/scalecom.md, "The recipe").
// RUN: not gradcomm-opt %s --gradcomm-scalecom="momentum=0.9" -split-input-file 2>&1 | FileCheck %s

// A step whose optimizer keeps a momentum buffer would get momentum twice.

shard.grid @grid(shape = 4)

// CHECK: momentum correction needs a step exported with plain SGD, but this gradient reaches 2 returned values (the optimizer keeps state of its own: a momentum buffer or Adam's moments); export with momentum 0, or drop 'momentum'
func.func @sgd_momentum(%w: tensor<2048xf32> {gradcomm.name = "w"},
                        %buf: tensor<2048xf32>, %g: tensor<2048xf32>)
    -> (tensor<2048xf32>, tensor<2048xf32>) {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %nb = arith.addf %buf, %r : tensor<2048xf32>
  %nw = arith.subf %w, %nb : tensor<2048xf32>
  return %nw, %nb : tensor<2048xf32>, tensor<2048xf32>
}

// -----

// An f64 gradient cannot go through the recipe's call: its velocity would
// be lost, so it is an error rather than a dense all-reduce.

shard.grid @grid(shape = 4)

// CHECK: momentum correction needs every gradient's velocity in the runtime, but this gradient cannot go through the recipe's call: its element type is not f32, bf16 or f16; export the step with the optimizer's own momentum and drop 'momentum'
func.func @f64(%w: tensor<2048xf64>, %g: tensor<2048xf64>) -> tensor<2048xf64> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf64> -> tensor<2048xf64>
  %nw = arith.subf %w, %r : tensor<2048xf64>
  return %nw : tensor<2048xf64>
}
