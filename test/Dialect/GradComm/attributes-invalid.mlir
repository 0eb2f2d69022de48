// RUN: gradcomm-opt %s -split-input-file -verify-diagnostics

// The dialect verifies every gradcomm.* attribute, wherever it is: a typo or
// a value of the wrong kind is an error before any pass runs, never a
// silently ignored override.

shard.grid @grid(shape = 4)
// expected-error @+1 {{unknown attribute 'gradcomm.ratoi' on argument 0 of 'func.func' (known gradcomm attributes: gradcomm.policy, gradcomm.name}}
func.func @typo_on_argument(%w: tensor<2048xf32> {gradcomm.ratoi = 4}, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @typo_on_op(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{unknown attribute 'gradcomm.polcy' on 'shard.all_reduce'}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.polcy = "dense"}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @beta(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{'gradcomm.beta' must be in (0, 1], got 2 (on 'shard.all_reduce')}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.beta = 2.0}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

// expected-error @+1 {{'gradcomm.k' must be >= 1, got 0 (on argument 0 of 'func.func')}}
func.func @k_zero(%w: tensor<2048xf32> {gradcomm.k = 0}) -> tensor<2048xf32> {
  return %w : tensor<2048xf32>
}

// -----

// expected-error @+1 {{'gradcomm.k' must be an integer >= 1, got 2.500000e+00 : f64}}
func.func @k_float(%w: tensor<2048xf32> {gradcomm.k = 2.5}) -> tensor<2048xf32> {
  return %w : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @ratio_type(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{'gradcomm.ratio' must be a number > 0, got "ten"}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.ratio = "ten"}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @ratio_negative(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{'gradcomm.ratio' must be > 0, got -3}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.ratio = -3}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @selection(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{'gradcomm.selection' must be "exact" or "chunk", got "sorted"}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.selection = "sorted"}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @policy(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{'gradcomm.policy' must be "dense", "scalecom" or "gossip", got "fast"}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.policy = "fast"}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @policy_not_a_string(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{'gradcomm.policy' must be "dense", "scalecom" or "gossip", got 1 : i64}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.policy = 1}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @chunk(%g: tensor<2048xf32>) -> tensor<2048xf32> {
  // expected-error @+1 {{'gradcomm.chunk_size' must be >= 1, got 0}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.selection = "chunk", gradcomm.chunk_size = 0}
      : tensor<2048xf32> -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// -----

// expected-error @+1 {{'gradcomm.mixing' must be in (0, 1), got 1.5 (on argument 0 of 'func.func')}}
func.func @bad_mixing(%w: tensor<16xf32> {gradcomm.mixing = 1.5}) -> tensor<16xf32> {
  return %w : tensor<16xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @bad_schedule(%g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'gradcomm.schedule' must be "matching", "ring" or "hypercube", got "star"}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.schedule = "star"}
      : tensor<16xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @bad_period(%g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'gradcomm.period' must be >= 1, got 0}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.period = 0}
      : tensor<16xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// expected-error @+1 {{'gradcomm.name' must be a non-empty string, got ""}}
func.func @empty_name(%w: tensor<16xf32> {gradcomm.name = ""}) -> tensor<16xf32> {
  return %w : tensor<16xf32>
}

// -----

func.func @ratio_on_other_op(%a: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'gradcomm.ratio' on 'arith.addf' has no meaning there: it applies to shard.all_reduce and shard.reduce_scatter ops and function arguments}}
  %r = arith.addf %a, %a {gradcomm.ratio = 4.0} : tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @name_on_op(%g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'gradcomm.name' on 'shard.all_reduce' has no meaning there: it applies to function arguments}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.name = "w"}
      : tensor<16xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// expected-error @+1 {{'gradcomm.runtime_name' on argument 0 of 'func.func' has no meaning there: it applies to shard.all_reduce and shard.reduce_scatter ops and gradcomm ops}}
func.func @runtime_name_on_argument(%w: tensor<16xf32> {gradcomm.runtime_name = "x"}) -> tensor<16xf32> {
  return %w : tensor<16xf32>
}
