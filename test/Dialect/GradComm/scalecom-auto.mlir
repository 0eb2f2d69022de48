// RUN: gradcomm-opt %s --split-input-file --verify-diagnostics --gradcomm-scalecom="policy=auto bandwidth=1Gbit report=true" | FileCheck %s --check-prefix=SLOW
// RUN: gradcomm-opt %s --split-input-file --gradcomm-scalecom="policy=auto bandwidth=400Gbit latency=1us" | FileCheck %s --check-prefix=FAST
// RUN: gradcomm-opt %s --split-input-file --gradcomm-scalecom="policy=auto bandwidth=1Gbit auto-ratios=10,100" | FileCheck %s --check-prefix=CAPPED

// policy=auto: per gradient, dense or ScaleCom at one of auto-ratios,
// whichever lib/Analysis/CostModel predicts fastest on the described
// cluster (4 ranks from the grid, 5 us latency, 20 GB/s memory by
// default); the least compressed choice within 5 % of the fastest wins.
//
// At 1 Gbit/s the 1M-element gradient's dense all-reduce is predicted at
// about 50 ms, ScaleCom at 4.4 ms (ratio 100) and 3.5 ms (ratio 400):
// ratio 400 (k = 2622); the 4096-element one at 0.23 ms dense, 0.042 ms
// (ratio 100) and 0.040 ms (ratio 400, less than 5 % faster: both send
// their indices in the agreement's payload, so neither pays a broadcast):
// ratio 100 (k = 41).
// With auto-ratios=10,100 (CAPPED) both take ratio 100. At 400 Gbit/s and 1 us the exact
// selection's memory passes cost more than the transfer saves: dense.
// Below min-elements (1024) nothing is predicted: dense, as under
// policy=fixed. A ratio given on the op wins.

shard.grid @grid(shape = 4)

// SLOW-LABEL: func @step
// SLOW:       gradcomm.cltk_compress {{.*}} k = 2622 selection = exact {warmup_steps = 100 : i64} : tensor<1048576xf32>
// SLOW:       gradcomm.cltk_compress {{.*}} k = 41 selection = exact {warmup_steps = 100 : i64} : tensor<4096xf32>
// SLOW:       shard.all_reduce {{.*}} : tensor<512xf32>
// SLOW:       gradcomm.cltk_compress {{.*}} k = 410 selection = exact {warmup_steps = 100 : i64} : tensor<4096xf32>
// FAST-LABEL: func @step
// FAST-NOT:   gradcomm.cltk_compress {{.*}}tensor<1048576xf32>
// FAST-NOT:   gradcomm.cltk_compress {{.*}}tensor<4096xf32>,
// FAST:       gradcomm.cltk_compress {{.*}} k = 410 selection = exact {warmup_steps = 100 : i64} : tensor<4096xf32>
// CAPPED-LABEL: func @step
// CAPPED:       gradcomm.cltk_compress {{.*}} k = 10486 selection = exact {warmup_steps = 100 : i64} : tensor<1048576xf32>
// CAPPED:       gradcomm.cltk_compress {{.*}} k = 41 selection = exact {warmup_steps = 100 : i64} : tensor<4096xf32>
func.func @step(%w0: tensor<1048576xf32>, %g0: tensor<1048576xf32>,
                %w1: tensor<4096xf32>, %g1: tensor<4096xf32>,
                %w2: tensor<512xf32>, %g2: tensor<512xf32>,
                %w3: tensor<4096xf32>, %g3: tensor<4096xf32>)
    -> (tensor<1048576xf32>, tensor<4096xf32>, tensor<512xf32>, tensor<4096xf32>) {
  // expected-remark-re @+1 {{compressed 'tensor<1048576xf32>' with k = 2622 of 1048576, selection = exact, beta = 0.5, state @step_arg0_grad; policy=auto on 4 ranks, 1.000 Gbit/s, 5.00 us: dense 50.{{[0-9]+}} ms, ratio 10 {{[0-9.]+}} ms, ratio 100 4.{{[0-9]+}} ms, ratio 400 3.{{[0-9]+}} ms -> ratio 400}}
  %r0 = shard.all_reduce %g0 on @grid grid_axes = [0] reduction = average
      : tensor<1048576xf32> -> tensor<1048576xf32>
  %u0 = arith.subf %w0, %r0 : tensor<1048576xf32>
  // expected-remark-re @+1 {{compressed 'tensor<4096xf32>' with k = 41 of 4096, {{.*}} -> ratio 100}}
  %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = average
      : tensor<4096xf32> -> tensor<4096xf32>
  %u1 = arith.subf %w1, %r1 : tensor<4096xf32>
  // expected-remark @+1 {{left dense: 512 elements < min-elements (1024)}}
  %r2 = shard.all_reduce %g2 on @grid grid_axes = [0] reduction = average
      : tensor<512xf32> -> tensor<512xf32>
  %u2 = arith.subf %w2, %r2 : tensor<512xf32>
  // expected-remark @+1 {{compressed 'tensor<4096xf32>' with k = 410 of 4096, selection = exact, beta = 0.5, state @step_arg6_grad}}
  %r3 = shard.all_reduce %g3 on @grid grid_axes = [0] reduction = average {gradcomm.ratio = 10.0}
      : tensor<4096xf32> -> tensor<4096xf32>
  %u3 = arith.subf %w3, %r3 : tensor<4096xf32>
  return %u0, %u1, %u2, %u3
      : tensor<1048576xf32>, tensor<4096xf32>, tensor<512xf32>, tensor<4096xf32>
}
