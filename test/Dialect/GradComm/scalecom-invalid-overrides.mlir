// RUN: gradcomm-opt %s --gradcomm-scalecom -split-input-file -verify-diagnostics

// Overrides that are valid alone (the dialect verifies each one, see
// attributes-invalid.mlir) but impossible for this gradient, and forced
// policies that cannot be honoured: diagnosed at the all-reduce.

shard.grid @grid(shape = 4)
func.func @k_too_large(%w: tensor<2048xf32> {gradcomm.k = 5000}, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: k = 5000 is outside [1, 2048]}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @k_and_chunk(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: 'k' = 7 conflicts with selection = chunk, which gives k = ceil(N / chunk_size) = 128}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.selection = "chunk", gradcomm.chunk_size = 16, gradcomm.k = 7}
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @forced_max(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: marked gradcomm.policy = "scalecom" (on the op) but cannot be rewritten: reduction 'max' is not a gradient reduction (sum or average)}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = max {gradcomm.policy = "scalecom"}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @forced_f64(%w: tensor<2048xf64> {gradcomm.policy = "scalecom"}, %g: tensor<2048xf64>) -> tensor<2048xf64> {
  // expected-error @+1 {{gradcomm-scalecom: marked gradcomm.policy = "scalecom" (on the argument) but cannot be rewritten: element type is not f32, bf16 or f16}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf64> -> tensor<2048xf64>
  %u = arith.subf %w, %r : tensor<2048xf64>
  return %u : tensor<2048xf64>
}
