// RUN: gradcomm-opt %s --gradcomm-scalecom | FileCheck %s --check-prefix=DEFAULT
// RUN: gradcomm-opt %s --gradcomm-scalecom="min-elements=0" | FileCheck %s --check-prefix=ALL
// RUN: gradcomm-opt %s --gradcomm-scalecom="min-elements=5000" | FileCheck %s --check-prefix=NONE

// 1024 elements is the default threshold: 1023 stays dense, 1024 does not.

shard.grid @grid(shape = 4)

// DEFAULT-LABEL: func @step
// DEFAULT:       shard.all_reduce {{.*}} : tensor<1023xf32>
// DEFAULT:       gradcomm.cltk_compress {{.*}} : tensor<1024xf32>
// DEFAULT:       shard.all_reduce {{.*}} : tensor<4xf32>
// DEFAULT-NOT:   gradcomm.cltk_compress
// ALL-COUNT-3:   gradcomm.cltk_compress
// ALL-NOT:       shard.all_reduce
// NONE-NOT:      gradcomm.cltk_compress
func.func @step(%w1: tensor<1023xf32>, %w2: tensor<1024xf32>, %b: tensor<4xf32>,
                %g1: tensor<1023xf32>, %g2: tensor<1024xf32>, %gb: tensor<4xf32>)
    -> (tensor<1023xf32>, tensor<1024xf32>, tensor<4xf32>) {
  %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = average
      : tensor<1023xf32> -> tensor<1023xf32>
  %r2 = shard.all_reduce %g2 on @grid grid_axes = [0] reduction = average
      : tensor<1024xf32> -> tensor<1024xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<4xf32> -> tensor<4xf32>
  %u1 = arith.subf %w1, %r1 : tensor<1023xf32>
  %u2 = arith.subf %w2, %r2 : tensor<1024xf32>
  %ub = arith.subf %b, %rb : tensor<4xf32>
  return %u1, %u2, %ub : tensor<1023xf32>, tensor<1024xf32>, tensor<4xf32>
}
