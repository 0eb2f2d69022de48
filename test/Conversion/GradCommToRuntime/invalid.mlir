// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime -split-input-file -verify-diagnostics

// What the runtime cannot do is a diagnostic, not a failed legalization.

shard.grid @grid(shape = 4)
func.func @max(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot be lowered to the runtime: reduction 'max' (sum and average only)}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] reduction = max
      : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @double(%x: tensor<8xf64>) -> tensor<8xf64> {
  // expected-error @+1 {{cannot be lowered to the runtime: it reduces f32, bf16 or f16 tensors only}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] reduction = sum
      : tensor<8xf64> -> tensor<8xf64>
  return %r : tensor<8xf64>
}

// -----

shard.grid @grid(shape = 2x?)
func.func @partial_group_of_dynamic_grid(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{communicates over part of grid @grid, whose shape is not static}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] reduction = sum
      : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}
