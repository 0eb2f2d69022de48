// A mixed-precision step (half-step.sh): f32 master weights, a TYPE
// (bf16 or f16) gradient averaged over 2 ranks, widened into the update.
// Compiled dense, and with the all-reduce as ScaleCom (POLICY is replaced
// by the script).
shard.grid @grid(shape = 2)
func.func @step(%w: tensor<64x32xf32> {gradcomm.name = "w"},
                %g: tensor<64x32xTYPE>) -> tensor<64x32xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      {gradcomm.policy = "POLICY", gradcomm.k = 40 : i64}
      : tensor<64x32xTYPE> -> tensor<64x32xTYPE>
  %wide = arith.extf %r : tensor<64x32xTYPE> to tensor<64x32xf32>
  %nw = arith.subf %w, %wide : tensor<64x32xf32>
  return %nw : tensor<64x32xf32>
}
