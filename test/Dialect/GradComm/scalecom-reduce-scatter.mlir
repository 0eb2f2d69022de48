// RUN: gradcomm-opt %s --gradcomm-scalecom="report=true" --split-input-file --verify-diagnostics | FileCheck %s
// The forced case below fails under local-topk too, hence `not`.
// RUN: not gradcomm-opt %s --gradcomm-scalecom="compressor=local-topk report=true" --split-input-file 2>&1 | FileCheck %s --check-prefix=LOCAL
// RUN: not gradcomm-opt %s --gradcomm-scalecom="policy=auto bandwidth=1Gbit latency=50us report=true" --split-input-file 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not gradcomm-opt %s --gradcomm-scalecom="warmup=ramp" --split-input-file 2>&1 | FileCheck %s --check-prefix=RAMP

// Sharded data parallelism: each rank reduce-scatters the whole local
// gradient and updates its shard of the parameter. The pass compresses the
// reduce-scatter as it compresses an all-reduce (CLT-k over the whole
// gradient, the memory of the whole gradient), with the values
// reduce-scattered: gradcomm.sparse_reduce_scatter.

shard.grid @grid(shape = 4)

// CHECK:      shard.grid @grid
// CHECK-NEXT: gradcomm.state @sharded_step_arg0_grad : tensor<256x64xf32>
// CHECK-LABEL: func @sharded_step
// CHECK-SAME: (%[[W:.*]]: tensor<64x64xf32>, %[[G:.*]]: tensor<256x64xf32>)
// CHECK:      %[[V:.*]], %[[I:.*]] = gradcomm.cltk_compress %[[G]] state @sharded_step_arg0_grad on @grid grid_axes = [0] k = 164 selection = exact {warmup_steps = 100 : i64} : tensor<256x64xf32> -> tensor<164xf32>, tensor<164xi64>
// CHECK-NEXT: %[[S:.*]] = gradcomm.sparse_reduce_scatter %[[V]], %[[I]] on @grid grid_axes = [0] reduction = average scatter_axis = 0 {gradcomm.runtime_name = "sharded_step_arg0_grad_reduce"} : tensor<164xf32>, tensor<164xi64> -> tensor<64x64xf32>
// CHECK-NEXT: gradcomm.memory_update %[[G]], %[[I]] state @sharded_step_arg0_grad beta = 5.000000e-01
// CHECK-NOT:  shard.reduce_scatter
// CHECK:      arith.subf %[[W]], %[[S]]
// LOCAL: remark: gradcomm-scalecom: left dense: compressor=local-topk has no reduce-scatter form
// policy=auto weighs the reduce-scatter forms: dense = recursive halving
// of 64 KiB over 4 ranks (2 * 50 us + 48 KiB * 8 ns = 493 us) plus the
// agreement (2 * (50 us + 464 B * 8 ns) = 107 us).
// AUTO:  remark: gradcomm-scalecom: compressed 'tensor<256x64xf32>' with k = 41 {{.*}}; policy=auto (reduce-scatter) on 4 ranks, 1.000 Gbit/s, 50.00 us: dense 0.6006 ms, {{.*}} -> ratio 400
// RAMP:  error: gradcomm-scalecom: warmup=ramp is not built for the compressed reduce-scatter (its warm-up is dense)
func.func @sharded_step(%w: tensor<64x64xf32>, %g: tensor<256x64xf32>) -> tensor<64x64xf32> {
  // expected-remark @+1 {{gradcomm-scalecom: compressed 'tensor<256x64xf32>' with k = 164 of 16384, selection = exact, beta = 0.5, state @sharded_step_arg0_grad}}
  %s = shard.reduce_scatter %g on @grid grid_axes = [0] reduction = average scatter_axis = 0
      : tensor<256x64xf32> -> tensor<64x64xf32>
  %u = arith.subf %w, %s : tensor<64x64xf32>
  return %u : tensor<64x64xf32>
}

// -----

// Reduce-scatters the pass cannot compress stay dense, with the reason
// (upstream's verifier already refuses a dimension the group does not
// divide).

shard.grid @grid(shape = 4)
shard.grid @open(shape = ?)

// CHECK-LABEL: func @left_dense
// CHECK-COUNT-3: shard.reduce_scatter
// CHECK-NOT: gradcomm.
func.func @left_dense(%w1: tensor<8x64xf32>, %g1: tensor<8x256xf32>,
                      %w2: tensor<4x64xf32>, %g2: tensor<8x64xf32>,
                      %w3: tensor<?x64xf32>, %g3: tensor<32x64xf32>)
    -> (tensor<8x64xf32>, tensor<4x64xf32>, tensor<?x64xf32>) {
  // expected-remark @+1 {{left dense: scatters along axis 1; only axis 0 (one contiguous run of the flat gradient per shard) is compressed}}
  %s1 = shard.reduce_scatter %g1 on @grid grid_axes = [0] scatter_axis = 1
      : tensor<8x256xf32> -> tensor<8x64xf32>
  // expected-remark @+1 {{left dense: not a gradient: the result does not reach a returned parameter update through elementwise ops}}
  %s2 = shard.reduce_scatter %g2 on @grid grid_axes = [0] scatter_axis = 0
      : tensor<8x64xf32> -> tensor<2x64xf32>
  // expected-remark @+1 {{left dense: the grid axis has no static size (the shard's extent is needed at compile time)}}
  %s3 = shard.reduce_scatter %g3 on @open grid_axes = [0] scatter_axis = 0
      : tensor<32x64xf32> -> tensor<?x64xf32>
  %u1 = arith.subf %w1, %s1 : tensor<8x64xf32>
  %u2 = arith.subf %w2, %w2 : tensor<4x64xf32>
  %u3 = arith.subf %w3, %s3 : tensor<?x64xf32>
  return %u1, %u2, %u3 : tensor<8x64xf32>, tensor<4x64xf32>, tensor<?x64xf32>
}

// -----

// Forced on a reduce-scatter that cannot be compressed: an error, never a
// silent dense fallback.

shard.grid @grid(shape = 4)

func.func @forced(%w: tensor<8x64xf32>, %g: tensor<8x256xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{gradcomm-scalecom: marked gradcomm.policy = "scalecom" (on the op) but cannot be rewritten: scatters along axis 1}}
  %s = shard.reduce_scatter %g on @grid grid_axes = [0] scatter_axis = 1
      {gradcomm.policy = "scalecom"} : tensor<8x256xf32> -> tensor<8x64xf32>
  %u = arith.subf %w, %s : tensor<8x64xf32>
  return %u : tensor<8x64xf32>
}
