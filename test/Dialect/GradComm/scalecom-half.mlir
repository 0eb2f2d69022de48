// RUN: gradcomm-opt %s --gradcomm-scalecom -verify-diagnostics | FileCheck %s

// Half-precision gradients are not compressed (the runtime is f32 only):
// they stay dense, with a warning, never silently.

shard.grid @grid(shape = 4)

// CHECK-LABEL: func @half
// CHECK-COUNT-2: shard.all_reduce
// CHECK-NOT: gradcomm.cltk_compress
func.func @half(%w: tensor<2048xf16>, %g: tensor<2048xf16>,
                %wb: tensor<2048xbf16>, %gb: tensor<2048xbf16>) -> (tensor<2048xf16>, tensor<2048xbf16>) {
  // expected-warning @+1 {{gradcomm-scalecom: 'f16' gradient left dense: scalecom supports f32 only}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf16> -> tensor<2048xf16>
  // expected-warning @+1 {{gradcomm-scalecom: 'bf16' gradient left dense: scalecom supports f32 only}}
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<2048xbf16> -> tensor<2048xbf16>
  %u = arith.subf %w, %r : tensor<2048xf16>
  %ub = arith.subf %wb, %rb : tensor<2048xbf16>
  return %u, %ub : tensor<2048xf16>, tensor<2048xbf16>
}
