// Bad options: a diagnostic and a failing exit code.
// RUN: not gradcomm-opt %s --gradcomm-easgd="alpha=1.5" 2>&1 | FileCheck %s --check-prefix=ALPHA
// RUN: not gradcomm-opt %s --gradcomm-easgd="moving-rate=0" 2>&1 | FileCheck %s --check-prefix=RATE
// RUN: not gradcomm-opt %s --gradcomm-easgd="period=0" 2>&1 | FileCheck %s --check-prefix=PERIOD
// n alpha > 1 on this group of 4: the center would overshoot.
// RUN: not gradcomm-opt %s --gradcomm-easgd="alpha=0.5" 2>&1 | FileCheck %s --check-prefix=OVERSHOOT
// A forced policy that cannot be honoured is an error, not a dense fallback.
// RUN: not gradcomm-opt %s --gradcomm-easgd -split-input-file 2>&1 | FileCheck %s --check-prefix=FORCED

// ALPHA: gradcomm-easgd: option 'alpha' must be in (0, 1] (or 0: moving-rate / n), got 1.5
// RATE: gradcomm-easgd: option 'moving-rate' must be in (0, 1], got 0
// PERIOD: gradcomm-easgd: option 'period' must be >= 1, got 0
// OVERSHOOT: gradcomm-easgd: alpha 0.5 times the group size 4 (the center's moving rate) must be <= 1
// FORCED: gradcomm-easgd: marked gradcomm.policy = "easgd" but cannot be rewritten: alpha = moving-rate / n needs a grid axis of static size (or give option 'alpha')

shard.grid @grid(shape = 4)

func.func @sgd(%w: tensor<64xf32>, %g: tensor<64xf32>) -> tensor<64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %u = arith.subf %w, %r : tensor<64xf32>
  return %u : tensor<64xf32>
}

// -----

shard.grid @dynamic(shape = ?)

func.func @forced(%w: tensor<64xf32> {gradcomm.policy = "easgd"}, %g: tensor<64xf32>) -> tensor<64xf32> {
  %r = shard.all_reduce %g on @dynamic grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %u = arith.subf %w, %r : tensor<64xf32>
  return %u : tensor<64xf32>
}
