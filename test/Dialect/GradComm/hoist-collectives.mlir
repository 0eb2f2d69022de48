// RUN: gradcomm-opt %s --gradcomm-hoist-collectives | FileCheck %s

// Reductions placed at the end of the backward pass move up to right after
// their gradients; a ScaleCom compress does too, but nothing crosses an
// operation with memory effects (the compress reads and writes its state).

shard.grid @grid(shape = 2)
gradcomm.state @m : tensor<8xf32>

// CHECK-LABEL: func.func @step(
// CHECK:         %[[G1:.*]] = arith.mulf %arg0, %arg0
// CHECK-NEXT:    %[[R1:.*]] = shard.all_reduce %[[G1]]
// CHECK-NEXT:    %[[G2:.*]] = arith.addf %[[G1]], %arg1
// CHECK-NEXT:    %[[R2:.*]] = shard.all_reduce %[[G2]]
// CHECK-NEXT:    %[[G3:.*]] = arith.subf %[[G2]], %arg1
// CHECK-NEXT:    %{{.*}}, %{{.*}} = gradcomm.cltk_compress %[[G3]]
// CHECK-NEXT:    %[[H:.*]] = arith.divf %[[G3]], %arg1
// CHECK-NEXT:    %[[R4:.*]] = shard.all_reduce %[[H]]
// CHECK-NEXT:    gradcomm.sparse_all_reduce
// CHECK-NEXT:    gradcomm.memory_update
func.func @step(%x: tensor<8xf32>, %y: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %g1 = arith.mulf %x, %x : tensor<8xf32>
  %g2 = arith.addf %g1, %y : tensor<8xf32>
  %g3 = arith.subf %g2, %y : tensor<8xf32>
  %h = arith.divf %g3, %y : tensor<8xf32>
  %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = sum
      : tensor<8xf32> -> tensor<8xf32>
  %r2 = shard.all_reduce %g2 on @grid grid_axes = [0] reduction = sum
      : tensor<8xf32> -> tensor<8xf32>
  %v, %i = gradcomm.cltk_compress %g3 state @m on @grid grid_axes = [0] k = 2 selection = exact
      : tensor<8xf32> -> tensor<2xf32>, tensor<2xi64>
  %r4 = shard.all_reduce %h on @grid grid_axes = [0] reduction = sum
      : tensor<8xf32> -> tensor<8xf32>
  %r3 = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average : tensor<2xf32>, tensor<2xi64> -> tensor<8xf32>
  gradcomm.memory_update %g3, %i state @m beta = 1.0 : tensor<8xf32>, tensor<2xi64>
  return %r1, %r2, %r3, %r4 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
