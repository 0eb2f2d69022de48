// RUN: gradcomm-opt %s | gradcomm-opt | FileCheck %s
// RUN: gradcomm-opt %s --mlir-print-op-generic | gradcomm-opt | FileCheck %s

shard.grid @grid(shape = 4)
shard.grid @grid2d(shape = 2x?)

// CHECK: gradcomm.state @w_grad : tensor<32x32xf32>
gradcomm.state @w_grad : tensor<32x32xf32>
// CHECK: gradcomm.state @b_grad : tensor<1000xf32>
gradcomm.state @b_grad : tensor<1000xf32>
// CHECK: gradcomm.state @w_gossip{{$}}
gradcomm.state @w_gossip
// CHECK: gradcomm.state @w_easgd : tensor<32x32xf32>
gradcomm.state @w_easgd : tensor<32x32xf32>

// CHECK-LABEL: func @cltk_exact
func.func @cltk_exact(%g: tensor<32x32xf32>) -> (tensor<64xf32>, tensor<64xi64>) {
  // CHECK: gradcomm.cltk_compress %{{.*}} state @w_grad on @grid grid_axes = [0] k = 64 selection = exact : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = exact
      : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
  return %v, %i : tensor<64xf32>, tensor<64xi64>
}

// CHECK-LABEL: func @cltk_chunk
func.func @cltk_chunk(%g: tensor<1000xf32>) -> (tensor<63xf32>, tensor<63xi64>) {
  // CHECK: gradcomm.cltk_compress %{{.*}} state @b_grad on @grid2d grid_axes = [1] k = 63 selection = chunk chunk_size = 16
  %v, %i = gradcomm.cltk_compress %g state @b_grad on @grid2d grid_axes = [1]
      k = 63 selection = chunk chunk_size = 16
      : tensor<1000xf32> -> tensor<63xf32>, tensor<63xi64>
  return %v, %i : tensor<63xf32>, tensor<63xi64>
}

// CHECK-LABEL: func @sparse_all_reduce
func.func @sparse_all_reduce(%v: tensor<64xf32>, %i: tensor<64xi64>)
    -> (tensor<32x32xf32>, tensor<32x32xf32>) {
  // CHECK: gradcomm.sparse_all_reduce %{{.*}}, %{{.*}} on @grid grid_axes = [0] reduction = average : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
  %a = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
  // CHECK: gradcomm.sparse_all_reduce %{{.*}}, %{{.*}} on @grid2d grid_axes = [0, 1] reduction = sum
  %s = gradcomm.sparse_all_reduce %v, %i on @grid2d grid_axes = [0, 1]
      reduction = sum
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
  return %a, %s : tensor<32x32xf32>, tensor<32x32xf32>
}

// CHECK-LABEL: func @sparse_reduce_scatter
func.func @sparse_reduce_scatter(%v: tensor<64xf32>, %i: tensor<64xi64>)
    -> (tensor<8x32xf32>, tensor<16x32xf32>) {
  // CHECK: gradcomm.sparse_reduce_scatter %{{.*}}, %{{.*}} on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<64xf32>, tensor<64xi64> -> tensor<8x32xf32>
  %s = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0]
      reduction = sum scatter_axis = 0
      : tensor<64xf32>, tensor<64xi64> -> tensor<8x32xf32>
  // A group of unknown size: the shard type is not checked against it.
  // CHECK: gradcomm.sparse_reduce_scatter %{{.*}}, %{{.*}} on @grid2d grid_axes = [1] reduction = average scatter_axis = 0
  %a = gradcomm.sparse_reduce_scatter %v, %i on @grid2d grid_axes = [1]
      reduction = average scatter_axis = 0
      : tensor<64xf32>, tensor<64xi64> -> tensor<16x32xf32>
  return %s, %a : tensor<8x32xf32>, tensor<16x32xf32>
}

// A bf16 gradient: its memory is f32, its values f32, its result bf16.
// CHECK-LABEL: func @half_step
// CHECK: gradcomm.cltk_compress %{{.*}} state @w_grad {{.*}} : tensor<32x32xbf16> -> tensor<64xf32>, tensor<64xi64>
// CHECK: gradcomm.sparse_all_reduce {{.*}} -> tensor<32x32xbf16>
// CHECK: gradcomm.memory_update {{.*}} : tensor<32x32xbf16>, tensor<64xi64>
func.func @half_step(%g: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = exact
      : tensor<32x32xbf16> -> tensor<64xf32>, tensor<64xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xbf16>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x32xbf16>, tensor<64xi64>
  return %r : tensor<32x32xbf16>
}

// CHECK-LABEL: func @memory_update
func.func @memory_update(%g: tensor<32x32xf32>, %i: tensor<64xi64>) {
  // CHECK: gradcomm.memory_update %{{.*}}, %{{.*}} state @w_grad beta = 5.000000e-01 : tensor<32x32xf32>, tensor<64xi64>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x32xf32>, tensor<64xi64>
  // CHECK: beta = 1.000000e+00
  gradcomm.memory_update %g, %i state @w_grad beta = 1.0
      : tensor<32x32xf32>, tensor<64xi64>
  return
}

// CHECK-LABEL: func @local_topk_all_gather
func.func @local_topk_all_gather(%g: tensor<32x32xf32>) -> tensor<32x32xf32> {
  // CHECK: gradcomm.local_topk_all_gather %{{.*}} state @w_grad on @grid grid_axes = [0] k = 1024 reduction = sum : tensor<32x32xf32> -> tensor<32x32xf32>
  %r = gradcomm.local_topk_all_gather %g state @w_grad on @grid grid_axes = [0]
      k = 1024 reduction = sum : tensor<32x32xf32> -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// CHECK-LABEL: func @gossip_exchange
func.func @gossip_exchange(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  // CHECK: gradcomm.gossip_exchange %{{.*}} state @w_gossip on @grid grid_axes = [0] schedule = matching mixing = 5.000000e-01 seed = 7 period = 1 : tensor<32x32xf32>
  %a = gradcomm.gossip_exchange %x state @w_gossip on @grid grid_axes = [0]
      schedule = matching mixing = 0.5 seed = 7 period = 1 : tensor<32x32xf32>
  // CHECK: schedule = ring mixing = 2.500000e-01 seed = 0 period = 4
  %b = gradcomm.gossip_exchange %a state @w_gossip on @grid grid_axes = [0]
      schedule = ring mixing = 0.25 seed = 0 period = 4 : tensor<32x32xf32>
  // CHECK: schedule = hypercube
  %c = gradcomm.gossip_exchange %b state @w_gossip on @grid grid_axes = [0]
      schedule = hypercube mixing = 0.5 seed = 0 period = 1 : tensor<32x32xf32>
  return %c : tensor<32x32xf32>
}

// CHECK-LABEL: func @elastic_average
func.func @elastic_average(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  // CHECK: gradcomm.elastic_average %{{.*}} state @w_easgd on @grid grid_axes = [0] alpha = 2.250000e-01 period = 4 : tensor<32x32xf32>
  %a = gradcomm.elastic_average %x state @w_easgd on @grid grid_axes = [0]
      alpha = 0.225 period = 4 : tensor<32x32xf32>
  // CHECK: gradcomm.elastic_average %{{.*}} alpha = 2.250000e-01 period = 1 mode = async : tensor<32x32xf32>
  %b = gradcomm.elastic_average %a state @w_easgd on @grid grid_axes = [0]
      alpha = 0.225 period = 1 mode = async : tensor<32x32xf32>
  // CHECK: gradcomm.elastic_average %{{.*}} alpha = 2.250000e-01 period = 1 mode = async center = sharded : tensor<32x32xf32>
  %s = gradcomm.elastic_average %b state @w_easgd on @grid grid_axes = [0]
      alpha = 0.225 period = 1 mode = async center = sharded : tensor<32x32xf32>
  // CHECK: gradcomm.gossip_exchange %{{.*}} schedule = random mixing = 5.000000e-01 seed = 3 period = 1 mode = async : tensor<32x32xf32>
  %c = gradcomm.gossip_exchange %s state @w_gossip on @grid grid_axes = [0]
      schedule = random mixing = 0.5 seed = 3 period = 1 mode = async : tensor<32x32xf32>
  return %c : tensor<32x32xf32>
}
