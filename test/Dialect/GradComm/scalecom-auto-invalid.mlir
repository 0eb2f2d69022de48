// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=sometimes" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=auto k=5" 2>&1 | FileCheck %s --check-prefix=FIXED-K
// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=auto auto-ratios=100,1" 2>&1 | FileCheck %s --check-prefix=RATIOS
// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=auto auto-tolerance=1.5" 2>&1 | FileCheck %s --check-prefix=TOLERANCE
// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=auto bandwidth=8Gbits" 2>&1 | FileCheck %s --check-prefix=RATE
// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=auto calibration=%S/no-such-file.txt" 2>&1 | FileCheck %s --check-prefix=FILE
// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=auto ranks=8" 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not gradcomm-opt %s --gradcomm-scalecom="bandwidth=1Gbit" 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=auto" --split-input-file 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// RUN: gradcomm-opt %s --gradcomm-scalecom="policy=auto ranks=4" --split-input-file | FileCheck %s --check-prefix=GIVEN

// Bad policy=auto options and clusters it cannot price: an error naming
// the option, never a silent choice.

// POLICY: error: gradcomm-scalecom: option 'policy' must be fixed or auto, got 'sometimes'
// FIXED-K: error: gradcomm-scalecom: policy=auto chooses the ratio per tensor with the cltk compressor; drop 'k'
// RATIOS: error: gradcomm-scalecom: option 'auto-ratios' needs ratios >= 2, got 1
// TOLERANCE: error: gradcomm-scalecom: option 'auto-tolerance' must be in [0, 1), got 1.5
// RATE: error: gradcomm-scalecom: policy=auto: bad bandwidth '8Gbits'
// FILE: error: gradcomm-scalecom: policy=auto: cannot read calibration file '{{.*}}no-such-file.txt'
// MISMATCH: error: gradcomm-scalecom: option 'ranks' = 8 but the grid axis has 4 ranks
// FIXED: error: gradcomm-scalecom: option 'bandwidth' applies to policy=auto only (policy is fixed)

shard.grid @grid(shape = 4)

func.func @step(%w: tensor<4096xf32>, %g: tensor<4096xf32>) -> tensor<4096xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<4096xf32> -> tensor<4096xf32>
  %u = arith.subf %w, %r : tensor<4096xf32>
  return %u : tensor<4096xf32>
}

// -----

// A grid axis of dynamic size: the ranks must be given.
// DYNAMIC: error: gradcomm-scalecom: policy=auto needs the number of ranks: the grid axis has no static size; give option 'ranks'
// GIVEN-LABEL: func @dynamic
// GIVEN: gradcomm.cltk_compress
shard.grid @dyn(shape = ?)

func.func @dynamic(%w: tensor<1048576xf32>, %g: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %r = shard.all_reduce %g on @dyn grid_axes = [0] reduction = average
      : tensor<1048576xf32> -> tensor<1048576xf32>
  %u = arith.subf %w, %r : tensor<1048576xf32>
  return %u : tensor<1048576xf32>
}
