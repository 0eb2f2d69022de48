// RUN: gradcomm-opt %s -canonicalize -cse | FileCheck %s

// Communicating and state-touching ops are never Pure: canonicalization and
// CSE must keep both identical compressions and the unused collectives.

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x32xf32>
gradcomm.state @w_gossip

// CHECK-LABEL: func @kept
func.func @kept(%g: tensor<32x32xf32>) {
  // CHECK-COUNT-2: gradcomm.cltk_compress
  %v0, %i0 = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = exact
      : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
  %v1, %i1 = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = exact
      : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
  // CHECK: gradcomm.sparse_all_reduce
  %r = gradcomm.sparse_all_reduce %v0, %i0 on @grid grid_axes = [0]
      reduction = average
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
  // CHECK: gradcomm.memory_update
  gradcomm.memory_update %g, %i0 state @w_grad beta = 1.0
      : tensor<32x32xf32>, tensor<64xi64>
  // CHECK: gradcomm.local_topk_all_gather
  %b = gradcomm.local_topk_all_gather %g state @w_grad on @grid grid_axes = [0]
      k = 64 reduction = sum : tensor<32x32xf32> -> tensor<32x32xf32>
  // CHECK: gradcomm.gossip_exchange
  %x = gradcomm.gossip_exchange %g state @w_gossip on @grid grid_axes = [0]
      schedule = ring mixing = 0.5 seed = 0 period = 1 : tensor<32x32xf32>
  return
}
