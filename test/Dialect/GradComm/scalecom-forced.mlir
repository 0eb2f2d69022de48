// RUN: gradcomm-opt %s --gradcomm-scalecom="min-elements=4096 exclude=w report=true" -verify-diagnostics | FileCheck %s
// RUN: gradcomm-opt %s --gradcomm-gossip="min-elements=4096 exclude=w report=true" 2>&1 | FileCheck %s --check-prefix=GOSSIP

// A forced policy (gradcomm.policy naming the pass) wins over the pass
// filters: min-elements, include and exclude. ScaleCom also compresses a
// forced reduction that feeds no update; another pass's policy is left
// alone.

shard.grid @grid(shape = 4)

// CHECK-LABEL: func @forced_past_filters
// CHECK: gradcomm.cltk_compress {{.*}} k = 11
// GOSSIP: remark: gradcomm-gossip: left dense: marked gradcomm.policy = "scalecom" (not this pass)
// GOSSIP: remark: gradcomm-gossip: left dense: 1024 elements < min-elements (4096)
// GOSSIP: remark: gradcomm-gossip: left dense: marked gradcomm.policy = "scalecom" (not this pass)
// GOSSIP-NOT: gradcomm.gossip_exchange
func.func @forced_past_filters(%w: tensor<1024xf32> {gradcomm.name = "w", gradcomm.policy = "scalecom"}, %g: tensor<1024xf32>) -> tensor<1024xf32> {
  // expected-remark @+1 {{compressed 'tensor<1024xf32>' with k = 11 of 1024}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<1024xf32> -> tensor<1024xf32>
  %u = arith.subf %w, %r : tensor<1024xf32>
  return %u : tensor<1024xf32>
}

// CHECK-LABEL: func @unforced_filtered
// CHECK: shard.all_reduce
// CHECK-NOT: gradcomm.cltk_compress
func.func @unforced_filtered(%w: tensor<1024xf32>, %g: tensor<1024xf32>) -> tensor<1024xf32> {
  // expected-remark @+1 {{left dense: 1024 elements < min-elements (4096)}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<1024xf32> -> tensor<1024xf32>
  %u = arith.subf %w, %r : tensor<1024xf32>
  return %u : tensor<1024xf32>
}

// CHECK-LABEL: func @forced_metric
// CHECK: gradcomm.cltk_compress {{.*}} state @forced_metric_all_reduce_grad
func.func @forced_metric(%loss: tensor<256xf32>) -> tensor<256xf32> {
  // expected-remark @+1 {{compressed 'tensor<256xf32>' with k = 3 of 256}}
  %r = shard.all_reduce %loss on @grid grid_axes = [0] reduction = average {gradcomm.policy = "scalecom"}
      : tensor<256xf32> -> tensor<256xf32>
  return %r : tensor<256xf32>
}
