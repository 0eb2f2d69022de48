// Bad pass options: a diagnostic and a failing exit code, never a crash.
// RUN: not gradcomm-opt %s --gradcomm-scalecom="ratio=0" 2>&1 | FileCheck %s --check-prefix=RATIO
// RUN: not gradcomm-opt %s --gradcomm-scalecom="ratio=-2" 2>&1 | FileCheck %s --check-prefix=RATIO-NEG
// RUN: not gradcomm-opt %s --gradcomm-scalecom="beta=0" 2>&1 | FileCheck %s --check-prefix=BETA0
// RUN: not gradcomm-opt %s --gradcomm-scalecom="beta=1.5" 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not gradcomm-opt %s --gradcomm-scalecom="selection=chunk chunk-size=-1" 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not gradcomm-opt %s --gradcomm-scalecom="selection=chunk ratio=0.4" 2>&1 | FileCheck %s --check-prefix=CHUNK0
// RUN: not gradcomm-opt %s --gradcomm-scalecom="k=5000" 2>&1 | FileCheck %s --check-prefix=KBIG
// RUN: not gradcomm-opt %s --gradcomm-scalecom="ratio=0.5" 2>&1 | FileCheck %s --check-prefix=KRATIO
// RUN: not gradcomm-opt %s --gradcomm-scalecom="selection=random" 2>&1 | FileCheck %s --check-prefix=SEL
// RUN: not gradcomm-opt %s --gradcomm-scalecom="k=-4" 2>&1 | FileCheck %s --check-prefix=KNEG
// RUN: not gradcomm-opt %s --gradcomm-scalecom="min-elements=-1" 2>&1 | FileCheck %s --check-prefix=MINEL
// RUN: not gradcomm-opt %s --gradcomm-scalecom="selection=chunk chunk-size=8 k=3" 2>&1 | FileCheck %s --check-prefix=KCHUNK

// RATIO:     error: gradcomm-scalecom: option 'ratio' must be > 0, got 0
// RATIO-NEG: error: gradcomm-scalecom: option 'ratio' must be > 0, got -2
// BETA0:     error: gradcomm-scalecom: option 'beta' must be in (0, 1], got 0
// BETA:      error: gradcomm-scalecom: option 'beta' must be in (0, 1], got 1.5
// CHUNK:     error: gradcomm-scalecom: option 'chunk-size' must be >= 1 (or 0 for round(ratio)), got -1
// CHUNK0:    error: gradcomm-scalecom: 'chunk_size' must be >= 1, got 0
// KBIG:      error: gradcomm-scalecom: k = 5000 is outside [1, 2048] (the element count of this gradient)
// KRATIO:    error: gradcomm-scalecom: k = 4096 is outside [1, 2048]
// SEL:       for the --selection option: Cannot find option named 'random'!
// KNEG:     error: gradcomm-scalecom: option 'k' must be >= 1 (or 0 for ratio), got -4
// MINEL:    error: gradcomm-scalecom: option 'min-elements' must be >= 0, got -1
// KCHUNK:    error: gradcomm-scalecom: 'k' = 3 conflicts with selection = chunk, which gives k = ceil(N / chunk_size) = 256

shard.grid @grid(shape = 4)

func.func @step(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}
