// Momentum SGD in the graph (momentum-step.sh): buf' = 0.9 buf + mean(g),
// w' = w - buf', for a weight and a small bias; compiled dense.
shard.grid @grid(shape = 2)
func.func @step(%w: tensor<64x32xf32> {gradcomm.name = "w"},
                %buf: tensor<64x32xf32>, %g: tensor<64x32xf32>,
                %b: tensor<16xf32> {gradcomm.name = "b"},
                %bbuf: tensor<16xf32>, %gb: tensor<16xf32>)
    -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<16xf32>, tensor<16xf32>) {
  %mu = arith.constant dense<0.9> : tensor<64x32xf32>
  %bmu = arith.constant dense<0.9> : tensor<16xf32>
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %decayed = arith.mulf %mu, %buf : tensor<64x32xf32>
  %nbuf = arith.addf %decayed, %r : tensor<64x32xf32>
  %nw = arith.subf %w, %nbuf : tensor<64x32xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<16xf32> -> tensor<16xf32>
  %bdecayed = arith.mulf %bmu, %bbuf : tensor<16xf32>
  %nbbuf = arith.addf %bdecayed, %rb : tensor<16xf32>
  %nb = arith.subf %b, %nbbuf : tensor<16xf32>
  return %nw, %nbuf, %nb, %nbbuf
      : tensor<64x32xf32>, tensor<64x32xf32>, tensor<16xf32>, tensor<16xf32>
}
