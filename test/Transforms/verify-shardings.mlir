// RUN: gradcomm-opt %s --gradcomm-verify-shardings -split-input-file -verify-diagnostics
// RUN: not gradcomm-opt %s --gradcomm-scalecom-pipeline -split-input-file 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: not gradcomm-opt %s --gradcomm-gossip-pipeline -split-input-file 2>&1 | FileCheck %s --check-prefix=PIPELINE

// Upstream shard-partition (MLIR 22.1) segfaults on a value annotated for
// its users with two different shardings; the pipelines refuse it first.
// PIPELINE: error: gradcomm: this value is annotated for its users with two different shardings
// PIPELINE-NOT: Stack dump

shard.grid @grid(shape = 2x2)
func.func @two_shardings(%w: tensor<64x32xf32>, %x: tensor<16x64xf32>)
    -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  // expected-note @+1 {{the other annotation}}
  %xs = shard.shard %x to %s annotate_for_users : tensor<16x64xf32>
  // expected-error @+1 {{gradcomm: this value is annotated for its users with two different shardings}}
  %xr = shard.shard %x to %r annotate_for_users : tensor<16x64xf32>
  %c0 = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x32xf32>
  %z0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.matmul ins(%xs, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y2 = linalg.matmul ins(%xr, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %y, %y2 : tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// The same sharding twice (two sharding ops with equal attributes) is fine.
shard.grid @grid(shape = 4)
func.func @same_sharding(%x: tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %t = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<16x64xf32>
  %b = shard.shard %x to %t annotate_for_users : tensor<16x64xf32>
  return %a, %b : tensor<16x64xf32>, tensor<16x64xf32>
}

