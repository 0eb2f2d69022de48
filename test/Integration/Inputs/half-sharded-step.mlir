// A sharded mixed-precision step (half-step.sh), ZeRO-3 style on 2 ranks:
// each rank holds its f32 master shard (rows [32 r, 32 r + 32) of a 64x32
// parameter) and its whole TYPE (bf16 or f16) gradient, reduce-scatters the
// gradient in TYPE, updates its master shard in f32 and all-gathers the
// TYPE copy of the parameter for the next forward. Compiled dense, and with
// the reduce-scatter as ScaleCom (POLICY is replaced by the script).
shard.grid @grid(shape = 2)
func.func @step(%w: tensor<32x32xf32> {gradcomm.name = "w"},
                %g: tensor<64x32xTYPE>)
    -> (tensor<32x32xf32>, tensor<64x32xTYPE>) {
  %s = shard.reduce_scatter %g on @grid grid_axes = [0] reduction = average
      scatter_axis = 0 {gradcomm.policy = "POLICY", gradcomm.k = 40 : i64}
      : tensor<64x32xTYPE> -> tensor<32x32xTYPE>
  %wide = arith.extf %s : tensor<32x32xTYPE> to tensor<32x32xf32>
  %nw = arith.subf %w, %wide : tensor<32x32xf32>
  %half = arith.truncf %nw : tensor<32x32xf32> to tensor<32x32xTYPE>
  %whole = shard.all_gather %half on @grid grid_axes = [0] gather_axis = 0
      : tensor<32x32xTYPE> -> tensor<64x32xTYPE>
  return %nw, %whole : tensor<32x32xf32>, tensor<64x32xTYPE>
}
