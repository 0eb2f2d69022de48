// RUN: gradcomm-opt %s --gradcomm-gossip -o %t.once.mlir
// RUN: gradcomm-opt %t.once.mlir --gradcomm-gossip -o %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir
// RUN: FileCheck %s --input-file=%t.twice.mlir

shard.grid @grid(shape = 4)

// CHECK-COUNT-1: gradcomm.state
// CHECK-NOT:     gradcomm.state
// CHECK:         shard.all_reduce {{.*}} : tensor<1xf32>
// CHECK-COUNT-1: gradcomm.gossip_exchange
// CHECK-NOT:     gradcomm.gossip_exchange
func.func @step(%w: tensor<64xf32>, %g: tensor<64xf32>, %l: tensor<1xf32>) -> (tensor<64xf32>, tensor<1xf32>) {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %loss = shard.all_reduce %l on @grid grid_axes = [0] reduction = average
      : tensor<1xf32> -> tensor<1xf32>
  %u = arith.subf %w, %r : tensor<64xf32>
  return %u, %loss : tensor<64xf32>, tensor<1xf32>
}
