// RUN: gradcomm-opt %s --gradcomm-gossip -split-input-file -verify-diagnostics

// Overrides that are valid alone (the dialect verifies each one, see
// attributes-invalid.mlir) but impossible here, and forced policies that
// cannot be honoured: diagnosed at the all-reduce.

shard.grid @grid(shape = 3)
func.func @hypercube_three(%w: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{gradcomm-gossip: the hypercube schedule needs a power-of-two group, got 3}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.schedule = "hypercube"}
      : tensor<16xf32> -> tensor<16xf32>
  %u = arith.subf %w, %r : tensor<16xf32>
  return %u : tensor<16xf32>
}

// -----

// Gossip rewrites the parameter update itself: forcing it on an all-reduce
// that feeds no update is an error, as it is for ScaleCom's structural
// limits, never a silent dense fallback.
shard.grid @grid(shape = 4)
func.func @forced_without_update(%g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{gradcomm-gossip: marked gradcomm.policy = "gossip" (on the op) but cannot be rewritten: not a gradient: the result does not reach a returned parameter update through elementwise ops}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.policy = "gossip"}
      : tensor<16xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @forced_f64(%w: tensor<16xf64>, %g: tensor<16xf64>) -> tensor<16xf64> {
  // expected-error @+1 {{gradcomm-gossip: marked gradcomm.policy = "gossip" (on the op) but cannot be rewritten: element type is not f32, bf16 or f16}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.policy = "gossip"}
      : tensor<16xf64> -> tensor<16xf64>
  %u = arith.subf %w, %r : tensor<16xf64>
  return %u : tensor<16xf64>
}
