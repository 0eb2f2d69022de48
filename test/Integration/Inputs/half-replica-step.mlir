// A 16-bit model's step (half-step.sh): a TYPE (bf16 or f16) weight and
// gradient, the update computed in f32 and rounded once, as the exporter
// writes it. Compiled with --strategy=gossip and --strategy=easgd: the
// gradient stays local and the updated TYPE weight is exchanged.
shard.grid @grid(shape = 2)
func.func @step(%w: tensor<64x32xTYPE> {gradcomm.name = "w"},
                %g: tensor<64x32xTYPE>) -> tensor<64x32xTYPE> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64x32xTYPE> -> tensor<64x32xTYPE>
  %wide_w = arith.extf %w : tensor<64x32xTYPE> to tensor<64x32xf32>
  %wide_r = arith.extf %r : tensor<64x32xTYPE> to tensor<64x32xf32>
  %nw = arith.subf %wide_w, %wide_r : tensor<64x32xf32>
  %n = arith.truncf %nw : tensor<64x32xf32> to tensor<64x32xTYPE>
  return %n : tensor<64x32xTYPE>
}
