// RUN: gradcomm-plan %s --ranks 4 --bandwidth 8Gbit --latency 10us --memory-bandwidth 10GB | FileCheck %s
// RUN: gradcomm-plan %s --ranks 4 --bandwidth 1Gbit --latency 10us --memory-bandwidth 10GB | FileCheck %s --check-prefix=SLOW

// A sharded step: gradcomm-plan prices a shard.reduce_scatter in its
// reduce-scatter forms, not as an all-reduce. #0 is the 4096-float
// all-reduce of gradcomm-plan.mlir (the same figures); #1 reduce-scatters
// 1M floats (4 MiB). By hand, alpha = 10 us, beta = 1 ns/B, 4 ranks:
// recursive halving, 2 * 10 us + 3/4 * 4194304 ns = 3.1657 ms, plus the
// agreement (20.928 us): 3.1867 ms, half the all-reduce's 6.3524 (its
// second half, the all-gather, is not part of a reduce-scatter). Local
// top-k, gossip and EASGD have no reduce-scatter form: n/a, and no total.

// CHECK:      tensor elements dense scalecom-r100 scalecom-r1000 local-topk-r100 local-topk-r1000 gossip easgd-p4 auto choice
// CHECK-NEXT: #0 4096 0.0855 0.0658 {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} 0.0658 scalecom-r100
// CHECK-NEXT: #1 [rs] 1048576 3.1867 {{[0-9.]+}} {{[0-9.]+}} n/a n/a n/a n/a 3.1867 dense
// CHECK-NEXT: total 1052672 3.2722 {{[0-9.]+}} {{[0-9.]+}} n/a n/a n/a n/a 3.2525
// CHECK-NEXT: MB sent per rank 3.1722 {{[0-9.]+}} {{[0-9.]+}} n/a n/a n/a n/a
// CHECK-NEXT: [rs]: a reduce-scatter (sharded training)
// CHECK-NEXT: fastest: dense (1.00x dense's predicted time)

// At 1 Gbit/s the compressed reduce-scatter wins: policy=auto picks the
// least ratio within 5 % of its fastest, as for an all-reduce.
// SLOW:      #1 [rs] 1048576 25.2132 {{.*}} scalecom-r400
// SLOW:      fastest: scalecom-r1000

shard.grid @grid(shape = 4)
func.func @step(%a: tensor<4096xf32>, %b: tensor<1048576xf32>)
    -> (tensor<4096xf32>, tensor<262144xf32>) {
  %ra = shard.all_reduce %a on @grid grid_axes = [0] reduction = average
      : tensor<4096xf32> -> tensor<4096xf32>
  %rb = shard.reduce_scatter %b on @grid grid_axes = [0] reduction = average
      scatter_axis = 0 : tensor<1048576xf32> -> tensor<262144xf32>
  return %ra, %rb : tensor<4096xf32>, tensor<262144xf32>
}
