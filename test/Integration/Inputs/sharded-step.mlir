// A sharded data-parallel step (sharded-step.sh), ZeRO-2 style: every rank
// holds its shard of the parameter (dimension 0 cut among the RANKS ranks)
// and the whole local gradient, reduce-scatters the gradient, updates its
// shard and all-gathers the whole parameter for the next forward (ZeRO-3's
// all-gather, dense). Compiled dense, and with the reduce-scatter as
// ScaleCom (POLICY is replaced by the script).
shard.grid @grid(shape = RANKS)
func.func @step(%w: tensor<SHARDx32xf32> {gradcomm.name = "w"},
                %g: tensor<8x32xf32>)
    -> (tensor<SHARDx32xf32>, tensor<8x32xf32>) {
  %s = shard.reduce_scatter %g on @grid grid_axes = [0] reduction = average
      scatter_axis = 0 {gradcomm.policy = "POLICY", gradcomm.k = 24 : i64}
      : tensor<8x32xf32> -> tensor<SHARDx32xf32>
  %nw = arith.subf %w, %s : tensor<SHARDx32xf32>
  %whole = shard.all_gather %nw on @grid grid_axes = [0] gather_axis = 0
      : tensor<SHARDx32xf32> -> tensor<8x32xf32>
  return %nw, %whole : tensor<SHARDx32xf32>, tensor<8x32xf32>
}
