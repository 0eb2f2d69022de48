// A two-layer gradient exchange written directly in the gradcomm dialect:
// the weight gradient is ScaleCom-compressed (ratio 64, exact selection,
// beta 0.5); the bias gradient is gossiped. Used by scripts/demo.sh.

shard.grid @grid(shape = 4)

gradcomm.state @fc1_weight_grad : tensor<128x64xf32>
gradcomm.state @fc1_bias_gossip

func.func @exchange(%gw: tensor<128x64xf32>, %b: tensor<64xf32>)
    -> (tensor<128x64xf32>, tensor<64xf32>) {
  %v, %i = gradcomm.cltk_compress %gw state @fc1_weight_grad on @grid
      grid_axes = [0] k = 128 selection = exact
      : tensor<128x64xf32> -> tensor<128xf32>, tensor<128xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average
      : tensor<128xf32>, tensor<128xi64> -> tensor<128x64xf32>
  gradcomm.memory_update %gw, %i state @fc1_weight_grad beta = 0.5
      : tensor<128x64xf32>, tensor<128xi64>
  %x = gradcomm.gossip_exchange %b state @fc1_bias_gossip on @grid
      grid_axes = [0] schedule = matching mixing = 0.5 seed = 7 period = 1
      : tensor<64xf32>
  return %r, %x : tensor<128x64xf32>, tensor<64xf32>
}
