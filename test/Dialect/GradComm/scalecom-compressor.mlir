// RUN: gradcomm-opt %s --gradcomm-scalecom | FileCheck %s --check-prefix=CLTK
// RUN: gradcomm-opt %s --gradcomm-scalecom="compressor=local-topk ratio=16" | FileCheck %s --check-prefix=LOCAL
// RUN: not gradcomm-opt %s --gradcomm-scalecom="compressor=powersgd" 2>&1 | FileCheck %s --check-prefix=BAD

// compressor=local-topk produces the all-gather baseline instead of CLT-k,
// with the same state naming, k and dense policy.

shard.grid @grid(shape = 4)

// CLTK:      gradcomm.cltk_compress
// LOCAL:     gradcomm.state @step_arg0_grad : tensor<2048xf32>
// LOCAL:     %[[R:.*]] = gradcomm.local_topk_all_gather %{{.*}} state @step_arg0_grad on @grid grid_axes = [0] k = 128 reduction = average : tensor<2048xf32> -> tensor<2048xf32>
// LOCAL-NOT: gradcomm.cltk_compress
// LOCAL:     arith.subf %{{.*}}, %[[R]]
// BAD:       error: gradcomm-scalecom: option 'compressor' must be cltk or local-topk, got 'powersgd'
func.func @step(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}
