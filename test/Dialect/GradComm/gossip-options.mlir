// RUN: gradcomm-opt %s --gradcomm-gossip | FileCheck %s --check-prefix=DEFAULT
// RUN: gradcomm-opt %s --gradcomm-gossip="schedule=ring" | FileCheck %s --check-prefix=RING
// RUN: gradcomm-opt %s --gradcomm-gossip="schedule=hypercube mixing=0.25 seed=7 period=3" | FileCheck %s --check-prefix=ALL
// RUN: gradcomm-opt %s --gradcomm-gossip="min-elements=100" | FileCheck %s --check-prefix=MINEL
// RUN: gradcomm-opt %s --gradcomm-gossip="exclude=step_arg1" | FileCheck %s --check-prefix=EXCL
// RUN: gradcomm-opt %s --gradcomm-gossip="include=step_arg1" | FileCheck %s --check-prefix=INCL

shard.grid @grid(shape = 4)

// DEFAULT-COUNT-2: schedule = matching mixing = 5.000000e-01 seed = 0 period = 1
// RING-COUNT-2:    schedule = ring mixing = 5.000000e-01
// ALL-COUNT-2:     schedule = hypercube mixing = 2.500000e-01 seed = 7 period = 3
// MINEL:           shard.all_reduce {{.*}} : tensor<8xf32>
// MINEL-COUNT-1:   gradcomm.gossip_exchange {{.*}} : tensor<256xf32>
// EXCL:            shard.all_reduce {{.*}} : tensor<8xf32>
// EXCL-COUNT-1:    gradcomm.gossip_exchange {{.*}} state @step_arg0_gossip
// INCL:            shard.all_reduce {{.*}} : tensor<256xf32>
// INCL-COUNT-1:    gradcomm.gossip_exchange {{.*}} state @step_arg1_gossip
func.func @step(%w: tensor<256xf32>, %b: tensor<8xf32>, %gw: tensor<256xf32>, %gb: tensor<8xf32>)
    -> (tensor<256xf32>, tensor<8xf32>) {
  %rw = shard.all_reduce %gw on @grid grid_axes = [0] reduction = average
      : tensor<256xf32> -> tensor<256xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %uw = arith.subf %w, %rw : tensor<256xf32>
  %ub = arith.subf %b, %rb : tensor<8xf32>
  return %uw, %ub : tensor<256xf32>, tensor<8xf32>
}
