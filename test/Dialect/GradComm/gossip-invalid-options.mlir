// Bad options: a diagnostic and a failing exit code.
// RUN: not gradcomm-opt %s --gradcomm-gossip="mixing=0" 2>&1 | FileCheck %s --check-prefix=MIX0
// RUN: not gradcomm-opt %s --gradcomm-gossip="mixing=1" 2>&1 | FileCheck %s --check-prefix=MIX1
// RUN: not gradcomm-opt %s --gradcomm-gossip="period=0" 2>&1 | FileCheck %s --check-prefix=PERIOD
// RUN: not gradcomm-opt %s --gradcomm-gossip="seed=-1" 2>&1 | FileCheck %s --check-prefix=SEED
// RUN: not gradcomm-opt %s --gradcomm-gossip="schedule=star" 2>&1 | FileCheck %s --check-prefix=SCHED

// MIX0:   error: gradcomm-gossip: option 'mixing' must be in (0, 1), got 0
// MIX1:   error: gradcomm-gossip: option 'mixing' must be in (0, 1), got 1
// PERIOD: error: gradcomm-gossip: option 'period' must be >= 1, got 0
// SEED:   error: gradcomm-gossip: option 'seed' must be >= 0, got -1
// SCHED:  for the --schedule option: Cannot find option named 'star'!

shard.grid @grid(shape = 4)
func.func @ok(%w: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<16xf32> -> tensor<16xf32>
  %u = arith.subf %w, %r : tensor<16xf32>
  return %u : tensor<16xf32>
}
