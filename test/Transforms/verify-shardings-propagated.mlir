// RUN: gradcomm-opt %s --pass-pipeline="builtin.module(func.func(sharding-propagation),gradcomm-verify-shardings{propagated=true})" -verify-diagnostics > /dev/null
// RUN: not gradcomm-opt %s --gradcomm-scalecom-pipeline 2>&1 | FileCheck %s
// RUN: not gradcomm-compile %s -o %t.o --strategy=dense 2>&1 | FileCheck %s

// After propagation: a tensor that depends on no annotated value has no
// sharding, and upstream shard-partition (MLIR 22.1) segfaults on it (found
// by test/Fuzz). The pipelines and the driver refuse it.
// CHECK: error: gradcomm: result #0 has no sharding after sharding-propagation
// CHECK-NOT: Stack dump

shard.grid @grid(shape = 4)
func.func @unsharded_result(%x: tensor<16x64xf32>) -> tensor<64x32xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<16x64xf32>
  // expected-error @+1 {{gradcomm: result #0 has no sharding after sharding-propagation}}
  %e = tensor.empty() : tensor<64x32xf32>
  return %e : tensor<64x32xf32>
}
