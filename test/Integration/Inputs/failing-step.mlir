// A step with a ScaleCom and a dense all-reduce and in-place SGD updates
// (both results are the argument buffers), compiled with
// gradcomm-compile --on-error=return by failing-step.sh.
shard.grid @grid(shape = 2)
func.func @step(%w: tensor<64xf32> {gradcomm.name = "w"},
                %b: tensor<4xf32> {gradcomm.name = "b"},
                %gw: tensor<64xf32>, %gb: tensor<4xf32>)
    -> (tensor<64xf32>, tensor<4xf32>) {
  %rw = shard.all_reduce %gw on @grid grid_axes = [0] reduction = average
      {gradcomm.policy = "scalecom", gradcomm.k = 8 : i64}
      : tensor<64xf32> -> tensor<64xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<4xf32> -> tensor<4xf32>
  %nw = arith.subf %w, %rw : tensor<64xf32>
  %nb = arith.subf %b, %rb : tensor<4xf32>
  return %nw, %nb : tensor<64xf32>, tensor<4xf32>
}
