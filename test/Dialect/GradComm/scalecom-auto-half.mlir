// RUN: gradcomm-opt %s --verify-diagnostics --gradcomm-scalecom="policy=auto bandwidth=1Gbit report=true" | FileCheck %s
// RUN: gradcomm-plan %s --ranks 4 --bandwidth 1Gbit --latency 5us | FileCheck %s --check-prefix=PLAN

// policy=auto prices a bf16 or f16 gradient with 2-byte values: its dense
// all-reduce and its compressed values travel in 16 bits. On 4 ranks at
// 1 Gbit/s (5 us, 20 GB/s memory) a bf16 gradient of 8192 values costs
// dense what an f32 one of 4096 does (0.2340 ms, against 0.4306 for f32
// 8192), and the choice moves: f32 8192 goes to ratio 400, bf16 8192 stays
// at ratio 100, the least ratio within 5 % of its fastest.

shard.grid @grid(shape = 4)

// CHECK-LABEL: func @step
// CHECK-COUNT-2: gradcomm.cltk_compress
func.func @step(%w: tensor<8192xf32>, %g: tensor<8192xf32>,
                %wb: tensor<8192xbf16>, %gb: tensor<8192xbf16>)
    -> (tensor<8192xf32>, tensor<8192xbf16>) {
  // expected-remark @+1 {{policy=auto on 4 ranks, 1.000 Gbit/s, 5.00 us: dense 0.4306 ms, ratio 10 0.1376 ms, ratio 100 0.0572 ms, ratio 400 0.0533 ms -> ratio 400}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<8192xf32> -> tensor<8192xf32>
  // expected-remark @+1 {{policy=auto (16-bit values) on 4 ranks, 1.000 Gbit/s, 5.00 us: dense 0.2340 ms, ratio 10 0.1145 ms, ratio 100 0.0546 ms, ratio 400 0.0527 ms -> ratio 100}}
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<8192xbf16> -> tensor<8192xbf16>
  %u = arith.subf %w, %r : tensor<8192xf32>
  %ub = arith.subf %wb, %rb : tensor<8192xbf16>
  return %u, %ub : tensor<8192xf32>, tensor<8192xbf16>
}

// gradcomm-plan prices each reduction with its own value size: the bf16
// row's dense time is the f32 row's for half the values.
// PLAN:      tensor elements dense
// PLAN-NEXT: #0 8192 0.4306 {{.*}} scalecom-r400
// PLAN-NEXT: #1 8192 0.2340 {{.*}} scalecom-r100
