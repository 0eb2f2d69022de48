// RUN: gradcomm-opt %s --gradcomm-name-collectives | FileCheck %s

// Gradient all-reduces are named after their parameter (as the ScaleCom
// state of the same gradient), other all-reduces by position; names are
// unique in the module and existing stamps are kept.

shard.grid @grid(shape = 4)

// CHECK-LABEL: func.func @step
// CHECK: shard.all_reduce %{{.*}} {gradcomm.runtime_name = "fc1_weight_grad"}
// CHECK: shard.all_reduce %{{.*}} {gradcomm.runtime_name = "fc1_weight_grad_1"}
// CHECK: shard.all_reduce %{{.*}} {gradcomm.runtime_name = "step_all_reduce_2"}
// CHECK: shard.all_reduce %{{.*}} {gradcomm.runtime_name = "mine"}
func.func @step(%w: tensor<16xf32> {gradcomm.name = "fc1.weight"}, %g: tensor<16xf32>,
                %h: tensor<16xf32>, %loss: tensor<1xf32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<1xf32>, tensor<1xf32>) {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<16xf32> -> tensor<16xf32>
  %u = arith.subf %w, %r : tensor<16xf32>
  %r2 = shard.all_reduce %h on @grid grid_axes = [0] reduction = average
      : tensor<16xf32> -> tensor<16xf32>
  %u2 = arith.subf %w, %r2 : tensor<16xf32>
  %l = shard.all_reduce %loss on @grid grid_axes = [0] reduction = average
      : tensor<1xf32> -> tensor<1xf32>
  %m = shard.all_reduce %loss on @grid grid_axes = [0] reduction = sum {gradcomm.runtime_name = "mine"}
      : tensor<1xf32> -> tensor<1xf32>
  return %u, %u2, %l, %m : tensor<16xf32>, tensor<16xf32>, tensor<1xf32>, tensor<1xf32>
}
