// RUN: gradcomm-opt %s --gradcomm-gossip -split-input-file -verify-diagnostics

// Bad per-op or per-argument overrides are diagnosed at the all-reduce.

shard.grid @grid(shape = 4)
func.func @bad_mixing(%w: tensor<16xf32> {gradcomm.mixing = 1.5}, %g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{gradcomm-gossip: 'mixing' must be in (0, 1), got 1.5}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<16xf32> -> tensor<16xf32>
  %u = arith.subf %w, %r : tensor<16xf32>
  return %u : tensor<16xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @bad_schedule(%w: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{gradcomm-gossip: 'gradcomm.schedule' must be "matching", "ring" or "hypercube", got "star"}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.schedule = "star"}
      : tensor<16xf32> -> tensor<16xf32>
  %u = arith.subf %w, %r : tensor<16xf32>
  return %u : tensor<16xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @bad_period(%w: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{gradcomm-gossip: 'period' must be >= 1, got 0}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.period = 0}
      : tensor<16xf32> -> tensor<16xf32>
  %u = arith.subf %w, %r : tensor<16xf32>
  return %u : tensor<16xf32>
}

// -----

shard.grid @grid(shape = 3)
func.func @hypercube_three(%w: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{gradcomm-gossip: the hypercube schedule needs a power-of-two group, got 3}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.schedule = "hypercube"}
      : tensor<16xf32> -> tensor<16xf32>
  %u = arith.subf %w, %r : tensor<16xf32>
  return %u : tensor<16xf32>
}
