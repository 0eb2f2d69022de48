// Plain SGD (momentum-step.sh): w' = w - mean(g) for a weight and a small
// bias; compiled with ScaleCom's momentum correction, the velocity then
// lives in the runtime.
shard.grid @grid(shape = 2)
func.func @step(%w: tensor<64x32xf32> {gradcomm.name = "w"},
                %g: tensor<64x32xf32>,
                %b: tensor<16xf32> {gradcomm.name = "b"}, %gb: tensor<16xf32>)
    -> (tensor<64x32xf32>, tensor<16xf32>) {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %nw = arith.subf %w, %r : tensor<64x32xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<16xf32> -> tensor<16xf32>
  %nb = arith.subf %b, %rb : tensor<16xf32>
  return %nw, %nb : tensor<64x32xf32>, tensor<16xf32>
}
