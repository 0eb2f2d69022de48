// RUN: gradcomm-opt %s --gradcomm-scalecom -o %t.once.mlir
// RUN: gradcomm-opt %t.once.mlir --gradcomm-scalecom -o %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir
// RUN: FileCheck %s --input-file=%t.twice.mlir

// Running the pass twice changes nothing the second time: one state per
// gradient, no new ops, dense ones left as they are.

shard.grid @grid(shape = 4)

// CHECK-COUNT-1: gradcomm.state
// CHECK-NOT:     gradcomm.state
// CHECK-COUNT-1: gradcomm.cltk_compress
// CHECK-NOT:     gradcomm.cltk_compress
// CHECK:         shard.all_reduce {{.*}} : tensor<8xf32>
func.func @step(%w: tensor<2048xf32>, %b: tensor<8xf32>, %g: tensor<2048xf32>, %gb: tensor<8xf32>)
    -> (tensor<2048xf32>, tensor<8xf32>) {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  %ub = arith.subf %b, %rb : tensor<8xf32>
  return %u, %ub : tensor<2048xf32>, tensor<8xf32>
}
