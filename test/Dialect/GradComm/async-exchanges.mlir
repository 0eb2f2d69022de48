// The asynchronous forms of gossip and EASGD (mode = async): the rewrites
// build them on request, the random schedule needs them, and they lower to
// the runtime's one-sided entry points.
// RUN: gradcomm-opt %s --gradcomm-gossip="mode=async schedule=random" | FileCheck %s --check-prefix=GOSSIP
// RUN: gradcomm-opt %s --gradcomm-easgd="mode=async period=2" | FileCheck %s --check-prefix=EASGD
// RUN: not gradcomm-opt %s --gradcomm-gossip="schedule=random" 2>&1 | FileCheck %s --check-prefix=SYNC-RANDOM
// RUN: gradcomm-opt %s --gradcomm-gossip="mode=async schedule=random" --gradcomm-name-collectives --convert-gradcomm-to-runtime | FileCheck %s --check-prefix=LOWER-GOSSIP
// RUN: gradcomm-opt %s --gradcomm-easgd="mode=async" --gradcomm-name-collectives --convert-gradcomm-to-runtime | FileCheck %s --check-prefix=LOWER-EASGD
// RUN: gradcomm-opt %s --gradcomm-easgd="mode=async center=sharded" | FileCheck %s --check-prefix=SHARDED
// RUN: gradcomm-opt %s --gradcomm-easgd="mode=async center=sharded" --gradcomm-name-collectives --convert-gradcomm-to-runtime | FileCheck %s --check-prefix=LOWER-SHARDED
// RUN: not gradcomm-opt %s --gradcomm-easgd="center=sharded" 2>&1 | FileCheck %s --check-prefix=SYNC-SHARDED

// GOSSIP: gradcomm.gossip_exchange {{.*}} schedule = random mixing = 5.000000e-01 seed = 0 period = 1 mode = async
// EASGD: gradcomm.elastic_average {{.*}} alpha = 2.250000e-01 period = 2 mode = async
// SYNC-RANDOM: gradcomm-gossip: schedule 'random' is not a pairing: it needs mode=async
// LOWER-GOSSIP: call @gradcomm_rt_gossip_async_f32
// LOWER-GOSSIP-NOT: gradcomm_rt_gossip_exchange_f32
// LOWER-EASGD: call @gradcomm_rt_elastic_average_async_f32
// SHARDED: gradcomm.elastic_average {{.*}} period = 1 mode = async center = sharded : tensor<64xf32>
// LOWER-SHARDED: call @gradcomm_rt_elastic_average_sharded_f32
// LOWER-SHARDED-NOT: gradcomm_rt_elastic_average_async_f32
// SYNC-SHARDED: gradcomm-easgd: option 'center=sharded' needs 'mode=async' (the synchronous center is replicated)

shard.grid @grid(shape = 4)

func.func @sgd(%w: tensor<64xf32>, %g: tensor<64xf32>) -> tensor<64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %u = arith.subf %w, %r : tensor<64xf32>
  return %u : tensor<64xf32>
}
