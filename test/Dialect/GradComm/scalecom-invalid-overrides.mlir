// RUN: gradcomm-opt %s --gradcomm-scalecom -split-input-file -verify-diagnostics

// Bad per-op or per-argument overrides are diagnosed at the all-reduce.

shard.grid @grid(shape = 4)
func.func @beta(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: 'beta' must be in (0, 1], got 2}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.beta = 2.0}
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @k_zero(%w: tensor<2048xf32> {gradcomm.k = 0}, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: k = 0 is outside [1, 2048]}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @ratio_type(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: 'gradcomm.ratio' must be a number, got "ten"}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.ratio = "ten"}
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @selection(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: 'gradcomm.selection' must be "exact" or "chunk", got "sorted"}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.selection = "sorted"}
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @policy(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: 'gradcomm.policy' must be "dense", "scalecom" or "gossip", got "fast"}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.policy = "fast"}
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @chunk(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{gradcomm-scalecom: 'chunk_size' must be >= 1, got 0}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.selection = "chunk", gradcomm.chunk_size = 0}
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}
