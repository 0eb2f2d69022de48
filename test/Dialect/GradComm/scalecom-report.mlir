// RUN: gradcomm-opt %s --gradcomm-scalecom="report=true" -split-input-file -verify-diagnostics | FileCheck %s

// Non-gradient all-reduces stay dense, and the report says why.

shard.grid @grid(shape = 2x2)

// CHECK-LABEL: func @not_gradients
func.func @not_gradients(%w: tensor<2048xf32>, %loss: tensor<1xf32>, %m: tensor<2048xf32>,
                         %i: tensor<2048xi32>, %g: tensor<2048xf32>)
    -> (tensor<1xf32>, tensor<2048xf32>, tensor<2048xi32>, tensor<2048xf32>, tensor<2048xf32>) {
  // A scalar loss average: nothing of its type is updated.
  // CHECK: shard.all_reduce {{.*}} : tensor<1xf32>
  // expected-remark @+1 {{gradcomm-scalecom: left dense: not a gradient: the result does not reach a returned parameter update through elementwise ops}}
  %l = shard.all_reduce %loss on @grid grid_axes = [0] reduction = average
      : tensor<1xf32> -> tensor<1xf32>
  // A max is not a gradient reduction.
  // expected-remark @+1 {{gradcomm-scalecom: left dense: reduction 'max' is not a gradient reduction (sum or average)}}
  %mx = shard.all_reduce %m on @grid grid_axes = [0] reduction = max
      : tensor<2048xf32> -> tensor<2048xf32>
  // An integer tensor (a metric count).
  // expected-remark @+1 {{gradcomm-scalecom: left dense: element type is not floating point}}
  %ic = shard.all_reduce %i on @grid grid_axes = [0] reduction = sum
      : tensor<2048xi32> -> tensor<2048xi32>
  // A reduction over two grid axes.
  // expected-remark @+1 {{gradcomm-scalecom: left dense: reduces over 2 grid axes; exactly one is needed}}
  %two = shard.all_reduce %g on @grid grid_axes = [0, 1] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %two : tensor<2048xf32>
  // A returned metric that is not a parameter update (no same-type
  // argument enters it): the reduced value is returned as it is.
  // expected-remark @+1 {{gradcomm-scalecom: left dense: not a gradient}}
  %metric = shard.all_reduce %m on @grid grid_axes = [1] reduction = sum
      : tensor<2048xf32> -> tensor<2048xf32>
  // CHECK-NOT: gradcomm.cltk_compress
  return %l, %mx, %ic, %u, %metric : tensor<1xf32>, tensor<2048xf32>, tensor<2048xi32>, tensor<2048xf32>, tensor<2048xf32>
}

// -----

shard.grid @grid(shape = 4)

// The gradient path ends in a non-elementwise op (a reduction), so the
// all-reduce does not feed a parameter update.
// CHECK-LABEL: func @through_non_elementwise
func.func @through_non_elementwise(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<1xf32> {
  // expected-remark @+1 {{left dense: not a gradient}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = sum
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  %s = tensor.extract_slice %u[0] [1] [1] : tensor<2048xf32> to tensor<1xf32>
  return %s : tensor<1xf32>
}

// -----

shard.grid @grid(shape = 4)

// CHECK-LABEL: func @reported
func.func @reported(%w: tensor<2048xf32>, %b: tensor<8xf32>, %g: tensor<2048xf32>, %gb: tensor<8xf32>)
    -> (tensor<2048xf32>, tensor<8xf32>) {
  // expected-remark @+1 {{gradcomm-scalecom: compressed 'tensor<2048xf32>' with k = 21 of 2048, selection = exact, beta = 0.5, state @reported_arg0_grad}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  // expected-remark @+1 {{gradcomm-scalecom: left dense: 8 elements < min-elements (1024)}}
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  %ub = arith.subf %b, %rb : tensor<8xf32>
  return %u, %ub : tensor<2048xf32>, tensor<8xf32>
}
