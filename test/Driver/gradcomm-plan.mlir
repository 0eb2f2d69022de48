// RUN: gradcomm-plan %s --ranks 4 --bandwidth 8Gbit --latency 10us --memory-bandwidth 10GB | FileCheck %s
// RUN: gradcomm-plan %s --calibration %S/Inputs/plan-calibration.txt | FileCheck %s
// RUN: gradcomm-plan %s --calibration %S/Inputs/plan-calibration.txt --ranks 1 | FileCheck %s --check-prefix=ONE
// RUN: gradcomm-plan %s --calibration %S/Inputs/plan-calibration-kernels.txt | FileCheck %s --check-prefix=KERNELS
// RUN: not gradcomm-plan %s --bandwidth 8Gbits 2>&1 | FileCheck %s --check-prefix=BAD-RATE
// RUN: not gradcomm-plan %s --latency -1us 2>&1 | FileCheck %s --check-prefix=BAD-LATENCY
// RUN: not gradcomm-plan %s --calibration %S/Inputs/plan-bad-calibration.txt 2>&1 | FileCheck %s --check-prefix=BAD-KEY
// RUN: not gradcomm-plan %s --ratio 0 2>&1 | FileCheck %s --check-prefix=BAD-RATIO
// RUN: not gradcomm-plan %s --auto-ratios 1 2>&1 | FileCheck %s --check-prefix=BAD-AUTO
// RUN: not gradcomm-plan %s --calibration %S/Inputs/missing.txt 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: gradcomm-plan %s --ranks 4 --bandwidth 1Gbit --latency 10us --memory-bandwidth 10GB | FileCheck %s --check-prefix=SLOW
// RUN: gradcomm-plan %s --ranks 4 --bandwidth 100Gbit --latency 10us --memory-bandwidth 10GB | FileCheck %s --check-prefix=FAST
// RUN: echo 'func.func @f() { return }' | not gradcomm-plan 2>&1 | FileCheck %s --check-prefix=NONE

// Two gradients of 4096 floats (16 KiB) and 1M floats (4 MiB). By hand,
// alpha = 10 us, beta = 1 ns/B, 4 ranks:
// * the agreement: 58 int64 (26 of fields and flags, 32 of payload), 464 B
//   by recursive doubling, 2 * (10 us + 464 ns) = 20.928 us;
// * dense 16 KiB: Rabenseifner, 2 * 2 * 10 us + 2 * 3/4 * 16384 ns
//   = 64.576 us, plus the agreement: 0.0855 ms;
// * dense 4 MiB: 40 us + 1.5 * 4194304 ns + 20.928 us = 6.3524 ms;
// * gossip 4 MiB: one exchange, 10 us + 4194304 ns, plus the mix
//   (12 B per element at 10 GB/s: 1.2583 ms) and the agreement: 5.4835 ms;
// * EASGD every 4 steps: a quarter of dense's all-reduce and of its
//   16 B-per-element update, plus the agreement every step: the fastest.

// CHECK:      cluster: 4 ranks, latency 10.00 us, link 1.000 GB/s, memory 10.000 GB/s
// At 8 Gbit/s ScaleCom's exact selection (60 B per element at 10 GB/s:
// 6.29 ms for #1) costs as much as dense's transfer saves, so policy=auto
// keeps #1 dense. #0's 41 indices, as 16-bit gaps (82 B), ride in the
// agreement's payload, so its ScaleCom is the agreement, the value all-reduce by
// recursive doubling (2 * (10 us + 164 ns)) and the kernels (4096 * 60 B
// at 10 GB/s = 24.576 us): 0.0658 ms, fewer latencies than dense's
// 0.0855. At 1 Gbit/s (SLOW) dense's #1 takes 50 ms and both are
// compressed, each at the least ratio within 5 % of its fastest.
// CHECK:      tensor elements dense scalecom-r100 scalecom-r1000 local-topk-r100 local-topk-r1000 gossip easgd-p4 auto choice
// CHECK-NEXT: #0 4096 0.0855 0.0658 {{.*}} 0.0658 scalecom-r100
// CHECK-NEXT: #1 1048576 6.3524 {{.*}} 5.4835 {{.*}} 6.3524 dense
// CHECK-NEXT: total 1052672 6.4379
// CHECK-NEXT: MB sent per rank
// CHECK-NEXT: fastest: easgd-p4 (0.32x dense
// CHECK-NEXT: policy=auto (dense or ScaleCom per tensor): 1.00x dense

// At 100 Gbit/s both stay dense (#0's ScaleCom, 0.0647 ms, is within 5 %
// of dense's 0.0620 and the least compressed choice wins), and one bucket
// saves one call's latency terms and agreement.
// FAST:      #0 4096 0.0620 {{.*}} dense
// FAST-NEXT: #1 1048576 {{.*}} dense
// FAST:      policy=auto leaves 2 tensors dense (1052672 elements): 0.6254 ms separately, 0.5654 ms in one bucket (--bucket-elements=1052672); with it 0.90x dense

// SLOW:      #0 4096 0.2640 {{.*}} scalecom-r100
// SLOW-NEXT: #1 1048576 50.3991 {{.*}} scalecom-r400
// SLOW:      policy=auto (dense or ScaleCom per tensor): 0.13x dense

// Measured kernel times (gradcomm-calibrate's kernel_* keys) replace the
// byte estimates: exact ScaleCom on #1 = the index broadcast (10486
// indices as 16-bit gaps with room for 15 escapes: 2 * (10486 + 30) =
// 21032 B, which do not fit in the agreement; binomial tree,
// 2 * (10 us + 21032 B * 1 ns) = 62.064 us) + the value all-reduce
// (40 us + 1.5 * 41.944 us = 102.916 us) + 3 ns * 1048576 (3.145728 ms)
// + the agreement (20.928 us) = 3.3316 ms.
// KERNELS: #1 1048576 6.3524 3.3316

// One rank: nothing to communicate, only the kernels.
// ONE: cluster: 1 ranks
// ONE: #1 1048576 0.0000

// BAD-RATE: gradcomm-plan: bad bandwidth '8Gbits'
// BAD-LATENCY: gradcomm-plan: bad latency '-1us'
// BAD-KEY: plan-bad-calibration.txt: line 2: bad key 'bandwith': expected ranks, latency, bandwidth, memory_bandwidth, kernel_scalecom_chunk, kernel_scalecom_exact or kernel_local_topk
// BAD-RATIO: gradcomm-plan: --ratio must be at least 1, got 0
// BAD-AUTO: gradcomm-plan: --auto-ratios must be at least 2, got 1
// MISSING: gradcomm-plan: cannot read calibration file '{{.*}}missing.txt'

// NONE: gradcomm-plan: no shard.all_reduce or shard.reduce_scatter in -: it reads a step before the strategy rewrite

shard.grid @grid(shape = 4)
func.func @step(%g0: tensor<4096xf32>, %g1: tensor<1048576xf32>)
    -> (tensor<4096xf32>, tensor<1048576xf32>) {
  %r0 = shard.all_reduce %g0 on @grid grid_axes = [0] reduction = sum
      : tensor<4096xf32> -> tensor<4096xf32>
  %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = sum
      : tensor<1048576xf32> -> tensor<1048576xf32>
  return %r0, %r1 : tensor<4096xf32>, tensor<1048576xf32>
}
