// RUN: gradcomm-opt %s --gradcomm-scalecom | FileCheck %s --check-prefix=DEFAULT
// RUN: gradcomm-opt %s --gradcomm-scalecom="beta=0.25" | FileCheck %s --check-prefix=LOWPASS

shard.grid @grid(shape = 4)

// DEFAULT: gradcomm.memory_update {{.*}} beta = 5.000000e-01
// LOWPASS: gradcomm.memory_update {{.*}} beta = 2.500000e-01
func.func @step(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}
