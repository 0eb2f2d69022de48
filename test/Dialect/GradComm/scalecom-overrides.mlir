// RUN: gradcomm-opt %s --gradcomm-scalecom="ratio=100 beta=1.0" | FileCheck %s

// Per-op attributes on the all-reduce and per-parameter attributes on the
// function argument override the pass options; the op's attribute wins.

shard.grid @grid(shape = 4)

// CHECK-LABEL: func @op_attrs
// CHECK: gradcomm.cltk_compress {{.*}} k = 64 selection = chunk chunk_size = 32 {warmup_steps = 100 : i64} :
// CHECK: gradcomm.memory_update {{.*}} beta = 5.000000e-01
func.func @op_attrs(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      {gradcomm.selection = "chunk", gradcomm.chunk_size = 32, gradcomm.beta = 0.5}
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// CHECK-LABEL: func @arg_attrs
// CHECK: gradcomm.cltk_compress {{.*}} k = 205 selection = exact {warmup_steps = 100 : i64} :
// CHECK: gradcomm.memory_update {{.*}} beta = 2.500000e-01
func.func @arg_attrs(%w: tensor<2048xf32> {gradcomm.ratio = 10.0, gradcomm.beta = 0.25},
                     %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// CHECK-LABEL: func @op_beats_arg
// CHECK: gradcomm.cltk_compress {{.*}} k = 7 selection = exact {warmup_steps = 100 : i64} :
func.func @op_beats_arg(%w: tensor<2048xf32> {gradcomm.k = 500},
                        %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average {gradcomm.k = 7}
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// A parameter marked dense stays dense.
// CHECK-LABEL: func @arg_dense
// CHECK: shard.all_reduce
// CHECK-NOT: gradcomm.cltk_compress
func.func @arg_dense(%w: tensor<2048xf32> {gradcomm.policy = "dense"},
                     %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}

// An op marked scalecom is compressed although nothing shows it is a
// gradient, and although it is below min-elements.
// CHECK-LABEL: func @op_forced
// CHECK: gradcomm.cltk_compress %{{.*}} state @op_forced_all_reduce_grad {{.*}} k = 2 selection = exact {warmup_steps = 100 : i64} : tensor<16xf32>
func.func @op_forced(%g: tensor<16xf32>) -> tensor<16xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = sum
      {gradcomm.policy = "scalecom", gradcomm.ratio = 8.0}
      : tensor<16xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}
