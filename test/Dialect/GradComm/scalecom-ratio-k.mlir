// RUN: gradcomm-opt %s --gradcomm-scalecom | FileCheck %s --check-prefix=DEFAULT
// RUN: gradcomm-opt %s --gradcomm-scalecom="ratio=16" | FileCheck %s --check-prefix=RATIO
// RUN: gradcomm-opt %s --gradcomm-scalecom="ratio=3" | FileCheck %s --check-prefix=ROUNDUP
// RUN: gradcomm-opt %s --gradcomm-scalecom="k=100" | FileCheck %s --check-prefix=FIXEDK
// RUN: gradcomm-opt %s --gradcomm-scalecom="ratio=1" | FileCheck %s --check-prefix=DENSEK

// k = ceil(N / ratio), or a fixed k; N = 4096.

shard.grid @grid(shape = 4)

// DEFAULT: gradcomm.cltk_compress {{.*}} k = 41 selection = exact {warmup_steps = 100 : i64} : tensor<64x64xf32> -> tensor<41xf32>, tensor<41xi64>
// RATIO:   gradcomm.cltk_compress {{.*}} k = 256 selection = exact {warmup_steps = 100 : i64} : tensor<64x64xf32> -> tensor<256xf32>, tensor<256xi64>
// ROUNDUP: gradcomm.cltk_compress {{.*}} k = 1366 selection = exact
// FIXEDK:  gradcomm.cltk_compress {{.*}} k = 100 selection = exact
// ratio 1 keeps every element: the compressed path computes the dense one.
// DENSEK:  gradcomm.cltk_compress {{.*}} k = 4096 selection = exact
func.func @step(%w: tensor<64x64xf32>, %g: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64x64xf32> -> tensor<64x64xf32>
  %u = arith.subf %w, %r : tensor<64x64xf32>
  return %u : tensor<64x64xf32>
}
