// RUN: gradcomm-plan %s --bandwidth 1Gbit --latency 10us --memory-bandwidth 10GB --simulate --sweep-ranks 2,16,1024 --steps 20 --csv %t.csv | FileCheck %s
// RUN: FileCheck %s --check-prefix=CSV < %t.csv
// RUN: gradcomm-plan %s --bandwidth 1Gbit --latency 10us --memory-bandwidth 10GB --simulate --sweep-ranks 2,16 --steps 20 --straggler-rate 1 --straggler-factor 2 --strategies dense,gossip-async | FileCheck %s --check-prefix=SLOW
// RUN: gradcomm-plan %s --simulate --sweep-ranks 4,8 --straggler-rate 0.3 --seed 7 > %t.a
// RUN: gradcomm-plan %s --simulate --sweep-ranks 4,8 --straggler-rate 0.3 --seed 7 > %t.b
// RUN: diff %t.a %t.b
// RUN: gradcomm-plan %s --simulate --sweep-ranks 2 --strategies scalecom-r100,scalecom-r100-exact | FileCheck %s --check-prefix=EXACT
// RUN: gradcomm-plan %s --bandwidth 1Gbit --latency 10us --memory-bandwidth 10GB --simulate --sweep-ranks 2,4 --steps 20 --strategies reduce-scatter,scalecom-rs-r100,scalecom-r100 | FileCheck %s --check-prefix=SHARDED
// RUN: gradcomm-plan %s --bandwidth 1Gbit --latency 10us --memory-bandwidth 10GB --simulate --sweep-ranks 8 --steps 20 --no-agreement --straggler-rate 0.3 --strategies gossip,gossip-ring,gossip-hypercube | FileCheck %s --check-prefix=SCHEDULES
// RUN: not gradcomm-plan %s --simulate --sweep-ranks 8,6 --strategies gossip,gossip-hypercube 2>&1 | FileCheck %s --check-prefix=HYPERCUBE-6
// RUN: not gradcomm-plan %s --simulate --strategies dense,allgather 2>&1 | FileCheck %s --check-prefix=BAD-STRATEGY
// RUN: not gradcomm-plan %s --simulate --straggler-rate 2 2>&1 | FileCheck %s --check-prefix=BAD-RATE
// RUN: not gradcomm-plan %s --simulate --sweep-ranks 0 2>&1 | FileCheck %s --check-prefix=BAD-RANKS

// gradcomm-plan --simulate replays the step's communication on n ranks
// with per-rank clocks (lib/Analysis/Simulator). 1 Gbit/s is 8 ns per
// byte; 50 ms of compute per step.
//
// * dense, 2 ranks: 50 ms + the 4 MiB all-reduce (2 * 10 us + 4194304 B *
//   8 ns = 33.574 ms) + the 16 KiB one (0.151 ms) + two agreements
//   (2 * (10 us + 464 B * 8 ns) = 2 * 13.71 us) = 83.753 ms, as
//   gradcomm-plan's dense total says.
// * asynchronous gossip (the runtime's random schedule), 2 ranks: 50 ms + the 4 MiB push (33.554 ms +
//   10 us) + the mix (12 B per element at 10 GB/s, 1.258 ms) + the small
//   tensor's = 84.969 ms; from 16 ranks, pushes to random peers meet at a
//   rank's link and queue (the wait row).
// * asynchronous EASGD: the center's links serve one worker at a time, so
//   its step grows with n; ScaleCom's traffic stays flat while local
//   top-k's all-gather grows with n, and so does its summed gradient's
//   density (1.96 k at 2 ranks with --topk-overlap's default 0.04, capped
//   at N / k = 100).

// CHECK:      simulated: 20 steps of 50.0 ms compute, stragglers 0.00 at 4.00x, seed 1, agreement on; latency 10.00 us, link 0.125 GB/s
// CHECK-NEXT: ms per step (mean over ranks)
// CHECK-NEXT: ranks dense scalecom-r100 local-topk-r100 gossip gossip-async easgd-p4 easgd-async-p4
// CHECK-NEXT: 2 83.753 52.594 58.216 84.982 84.969 58.880 58.847
// CHECK-NEXT: 16 113.430 53.345 72.617 85.024 91.435 66.361 227.024
// CHECK-NEXT: 1024 117.979 54.302 1101.598 85.106 94.380 67.622 15479.755
// CHECK-NEXT: MB sent per rank per step
// CHECK-NEXT: ranks
// CHECK-NEXT: 2 4.2116 0.0483 0.1273
// CHECK-NEXT: 16 7.8988 0.0929 1.8986
// CHECK-NEXT: 1024 8.4224 0.1052 129.2387
// CHECK:      ms a rank waits per step
// CHECK-NEXT: ranks
// CHECK-NEXT: 2 0.000 0.000 0.000 {{[0-9.]+}} 0.000 0.000 0.000
// CHECK-NEXT: 16 0.000 0.000 0.000 {{[0-9.]+}} 6.467 0.000 160.803
// CHECK:      non-zeros of the summed gradient / k
// CHECK-NEXT: ranks
// CHECK-NEXT: 2 1.00 1.00 1.96
// CHECK-NEXT: 16 1.00 1.00 15.40
// CHECK-NEXT: 1024 1.00 1.00 100.00
// CHECK-NEXT: fastest per step: 2:scalecom-r100 16:scalecom-r100 1024:scalecom-r100

// CSV: ranks,strategy,ms_per_step,mb_per_step,wait_ms_per_step,density_over_k
// CSV: 2,dense,83.7529

// Every rank twice as slow every step: dense waits for nobody (all are
// equally slow) and costs 50 ms more.
// SLOW:      2 133.753 134.969
// SLOW-NEXT: 16 163.430 139.703

// The exact selection's passes (40 B per element more at the default
// 20 GB/s: 2.1 ms for the 1M + 4096 elements) on top of the chunk path,
// whose indices travel as 1-byte offsets inside their chunks (exact:
// 16-bit gaps, 2 bytes and room for the escapes).
// EXACT: ranks scalecom-r100 scalecom-r100-exact
// EXACT-NEXT: 2 51.125 53.239
// EXACT:      MB sent per rank per step
// EXACT-NEXT: ranks
// EXACT-NEXT: 2 0.0483 0.0536

// Sharded training: the reduce-scatter by recursive halving (log2 n
// latencies, (n - 1) / n of the buffer), 2 ranks: 50 ms + (10 us + 8 KiB *
// 8 ns) + (10 us + 2 MiB * 8 ns) + two agreements = 66.890 ms; ScaleCom's
// reduce-scatter form sends (n - 1) / n of its k values where the
// all-reduce form sends twice that.
// SHARDED:      ranks reduce-scatter scalecom-rs-r100 scalecom-r100
// SHARDED-NEXT: 2 66.890 52.415 52.594
// SHARDED-NEXT: 4 75.359 52.641 52.914
// SHARDED:      MB sent per rank per step
// SHARDED-NEXT: ranks
// SHARDED-NEXT: 2 2.1063 0.0272 0.0483

// Synchronous gossip pairs ranks with the runtime's own schedule
// (runtime/src/kernels/Schedule.h): "gossip" is the gossip rewrite's
// default, matching. Without the agreement a rank waits for its peer only,
// so with stragglers the schedules differ. The hypercube needs a
// power-of-two group, in the simulator as in the runtime.
// SCHEDULES:      ranks gossip gossip-ring gossip-hypercube
// SCHEDULES-NEXT: 8 203.094 197.469 199.344
// HYPERCUBE-6: gradcomm-plan: --strategies: gossip-hypercube on 6 ranks: the hypercube schedule needs a power-of-two number of ranks (the runtime refuses it)
// HYPERCUBE-6-NOT: simulated:

// BAD-STRATEGY: gradcomm-plan: --strategies: unknown strategy 'allgather'
// BAD-RATE: gradcomm-plan: --straggler-rate must be in [0, 1]
// BAD-RANKS: gradcomm-plan: --sweep-ranks: 0 is not in [1, 2^20]

shard.grid @grid(shape = 4)
func.func @step(%g0: tensor<4096xf32>, %g1: tensor<1048576xf32>)
    -> (tensor<4096xf32>, tensor<1048576xf32>) {
  %r0 = shard.all_reduce %g0 on @grid grid_axes = [0] reduction = sum
      : tensor<4096xf32> -> tensor<4096xf32>
  %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = sum
      : tensor<1048576xf32> -> tensor<1048576xf32>
  return %r0, %r1 : tensor<4096xf32>, tensor<1048576xf32>
}
