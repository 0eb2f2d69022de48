// A step on a 2x2 grid (grid-step.sh): data parallelism along axis 0 for
// the weight gradient, a sum along axis 1 for the bias gradient, and a sum
// over both axes (every rank). Compiled dense, and with the weight's
// all-reduce as ScaleCom (K_WEIGHT is replaced by the script).
shard.grid @grid(shape = 2x2)
func.func @step(%w: tensor<256xf32> {gradcomm.name = "w"},
                %b: tensor<16xf32> {gradcomm.name = "b"},
                %gw: tensor<256xf32>, %gb: tensor<16xf32>)
    -> (tensor<256xf32>, tensor<16xf32>, tensor<16xf32>) {
  %rw = shard.all_reduce %gw on @grid grid_axes = [0] reduction = average
      {gradcomm.policy = "POLICY", gradcomm.k = K_WEIGHT : i64}
      : tensor<256xf32> -> tensor<256xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [1] reduction = sum
      : tensor<16xf32> -> tensor<16xf32>
  %total = shard.all_reduce %gb on @grid grid_axes = [0, 1] reduction = sum
      : tensor<16xf32> -> tensor<16xf32>
  %nw = arith.subf %w, %rw : tensor<256xf32>
  %nb = arith.subf %b, %rb : tensor<16xf32>
  return %nw, %nb, %total : tensor<256xf32>, tensor<16xf32>, tensor<16xf32>
}
