// RUN: gradcomm-opt %s --gradcomm-gossip-pipeline="schedule=ring mixing=0.25" | FileCheck %s

// The annotated single-device step of scalecom-pipeline.mlir, partitioned
// and rewritten into gossiping SGD: the partitioner's sum all-reduce
// becomes 4 * the local gradient.

// CHECK:       gradcomm.state @step_arg0_gossip
// CHECK-LABEL: func.func @step
// CHECK-NOT:   shard.all_reduce
// CHECK:       arith.constant dense<4.000000e+00> : tensor<64x32xf32>
// CHECK:       gradcomm.gossip_exchange {{.*}} schedule = ring mixing = 2.500000e-01

shard.grid @grid(shape = 4)
#mapX = affine_map<(i, j, b) -> (b, i)>
#mapE = affine_map<(i, j, b) -> (b, j)>
#mapG = affine_map<(i, j, b) -> (i, j)>
func.func @step(%w: tensor<64x32xf32>, %x: tensor<16x64xf32>, %t: tensor<16x32xf32>) -> tensor<64x32xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<16x64xf32>
  %ts = shard.shard %t to %s : tensor<16x32xf32>
  %c0 = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x32xf32>
  %z0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.matmul ins(%xs, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %err = linalg.sub ins(%y, %ts : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %g = linalg.generic {indexing_maps = [#mapX, #mapE, #mapG], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xs, %err : tensor<16x64xf32>, tensor<16x32xf32>) outs(%z2 : tensor<64x32xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s2 = arith.addf %acc, %m : f32
      linalg.yield %s2 : f32
  } -> tensor<64x32xf32>
  %lr = arith.constant 0.01 : f32
  %lrt = linalg.fill ins(%lr : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %upd = linalg.mul ins(%g, %lrt : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %wn = linalg.sub ins(%w, %upd : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %wn : tensor<64x32xf32>
}
