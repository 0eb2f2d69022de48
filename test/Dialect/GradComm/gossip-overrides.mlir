// RUN: gradcomm-opt %s --gradcomm-gossip | FileCheck %s

// Per-op and per-argument overrides; the op's attribute wins.
shard.grid @grid(shape = 4)

// CHECK-LABEL: func.func @overrides
// CHECK: shard.all_reduce {{.*}} : tensor<8xf32>
// CHECK: gradcomm.gossip_exchange {{.*}} state @overrides_arg0_gossip {{.*}} schedule = ring mixing = 2.000000e-01 seed = 0 period = 2
// CHECK: gradcomm.gossip_exchange {{.*}} state @overrides_arg2_gossip {{.*}} schedule = hypercube mixing = 5.000000e-01
func.func @overrides(%w: tensor<16xf32> {gradcomm.schedule = "hypercube", gradcomm.mixing = 0.2},
                     %b: tensor<8xf32> {gradcomm.policy = "dense"},
                     %c: tensor<8xf32>,
                     %gw: tensor<16xf32>, %gb: tensor<8xf32>, %gc: tensor<8xf32>)
    -> (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) {
  %rw = shard.all_reduce %gw on @grid grid_axes = [0] reduction = average
      {gradcomm.schedule = "ring", gradcomm.period = 2}
      : tensor<16xf32> -> tensor<16xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %rc = shard.all_reduce %gc on @grid grid_axes = [0] reduction = average
      {gradcomm.schedule = "hypercube"}
      : tensor<8xf32> -> tensor<8xf32>
  %uw = arith.subf %w, %rw : tensor<16xf32>
  %ub = arith.subf %b, %rb : tensor<8xf32>
  %uc = arith.subf %c, %rc : tensor<8xf32>
  return %uw, %ub, %uc : tensor<16xf32>, tensor<8xf32>, tensor<8xf32>
}
