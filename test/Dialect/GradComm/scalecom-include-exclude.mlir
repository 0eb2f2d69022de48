// RUN: gradcomm-opt %s --gradcomm-scalecom | FileCheck %s --check-prefix=BOTH
// RUN: gradcomm-opt %s --gradcomm-scalecom="exclude=fc1.weight" | FileCheck %s --check-prefix=EXCL
// RUN: gradcomm-opt %s --gradcomm-scalecom="include=fc1.weight" | FileCheck %s --check-prefix=INCL
// RUN: gradcomm-opt %s --gradcomm-scalecom="exclude=step_arg1" | FileCheck %s --check-prefix=BYINDEX

// Parameters are named by their `gradcomm.name` argument attribute, or
// "<function>_arg<N>"; state symbols derive from the same name.

shard.grid @grid(shape = 4)

// BOTH:    gradcomm.state @fc1_weight_grad : tensor<2048xf32>
// BOTH:    gradcomm.state @step_arg1_grad : tensor<4096xf32>
// BOTH-COUNT-2: gradcomm.cltk_compress
// EXCL-NOT: gradcomm.state @fc1_weight_grad
// EXCL:    gradcomm.state @step_arg1_grad
// EXCL:    shard.all_reduce {{.*}} : tensor<2048xf32>
// EXCL:    gradcomm.cltk_compress {{.*}} : tensor<4096xf32>
// INCL:    gradcomm.state @fc1_weight_grad
// INCL-NOT: gradcomm.state
// INCL:    gradcomm.cltk_compress {{.*}} : tensor<2048xf32>
// INCL:    shard.all_reduce {{.*}} : tensor<4096xf32>
// BYINDEX: gradcomm.cltk_compress {{.*}} : tensor<2048xf32>
// BYINDEX: shard.all_reduce {{.*}} : tensor<4096xf32>
func.func @step(%w1: tensor<2048xf32> {gradcomm.name = "fc1.weight"},
                %w2: tensor<4096xf32>,
                %g1: tensor<2048xf32>, %g2: tensor<4096xf32>)
    -> (tensor<2048xf32>, tensor<4096xf32>) {
  %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %r2 = shard.all_reduce %g2 on @grid grid_axes = [0] reduction = average
      : tensor<4096xf32> -> tensor<4096xf32>
  %u1 = arith.subf %w1, %r1 : tensor<2048xf32>
  %u2 = arith.subf %w2, %r2 : tensor<4096xf32>
  return %u1, %u2 : tensor<2048xf32>, tensor<4096xf32>
}
