// RUN: gradcomm-opt %s --gradcomm-scalecom="report=true" -verify-diagnostics | FileCheck %s

// An optimizer with momentum returns two updates computed from the reduced
// gradient: the buffer (`buf = m * buf + g`, an unnamed argument) and the
// parameter (`w - lr * buf`, named). The memory is named after the
// parameter, whichever return the use lists reach first.

#id = affine_map<(d0) -> (d0)>
shard.grid @grid(shape = 4)

// CHECK: gradcomm.state @fc_weight_grad : tensor<2048xf32>
// CHECK-LABEL: func @sgd_momentum
func.func @sgd_momentum(%w: tensor<2048xf32> {gradcomm.name = "fc.weight"},
                        %buf: tensor<2048xf32>, %g: tensor<2048xf32>)
    -> (tensor<2048xf32>, tensor<2048xf32>) {
  %m = arith.constant 0.9 : f32
  %lr = arith.constant 0.1 : f32
  %e = tensor.empty() : tensor<2048xf32>
  // expected-remark @+1 {{gradcomm-scalecom: compressed 'tensor<2048xf32>' with k = 21 of 2048, selection = exact, beta = 0.5, state @fc_weight_grad}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average : tensor<2048xf32> -> tensor<2048xf32>
  %nb = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%buf, %r : tensor<2048xf32>, tensor<2048xf32>) outs(%e : tensor<2048xf32>) {
    ^bb0(%b: f32, %x: f32, %o: f32):
      %s = arith.mulf %b, %m : f32
      %t = arith.addf %s, %x : f32
      linalg.yield %t : f32
  } -> tensor<2048xf32>
  %nw = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%w, %nb : tensor<2048xf32>, tensor<2048xf32>) outs(%e : tensor<2048xf32>) {
    ^bb0(%p: f32, %d: f32, %o: f32):
      %s = arith.mulf %d, %lr : f32
      %t = arith.subf %p, %s : f32
      linalg.yield %t : f32
  } -> tensor<2048xf32>
  return %nb, %nw : tensor<2048xf32>, tensor<2048xf32>
}
