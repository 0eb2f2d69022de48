// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime -split-input-file -verify-diagnostics | FileCheck %s

// Sharded steps: the dense shard.reduce_scatter and the compressed step
// (cltk_compress + sparse_reduce_scatter + memory_update) each become one
// runtime call that writes a fresh shard buffer.

shard.grid @grid(shape = 4)

// CHECK-DAG:   func.func private @gradcomm_rt_reduce_scatter_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @dense
// CHECK-SAME:  (%[[G:.*]]: tensor<32x16xf32>)
// CHECK:       %[[IN:.*]] = bufferization.to_buffer %[[G]] read_only : tensor<32x16xf32> to memref<32x16xf32>
// CHECK:       %[[SHARD:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK:       %[[AVG:.*]] = arith.constant 1 : i32
// CHECK:       %[[STATUS:.*]] = call @gradcomm_rt_reduce_scatter_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[AVG]])
// CHECK:       call @gradcomm_rt_check(%[[STATUS]])
// CHECK:       bufferization.to_tensor %[[SHARD]]
// CHECK-NOT:   shard.reduce_scatter
// CHECK:       return
func.func @dense(%g: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %s = shard.reduce_scatter %g on @grid grid_axes = [0] reduction = average
      scatter_axis = 0 : tensor<32x16xf32> -> tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x16xf32>

// CHECK-DAG:   func.func private @gradcomm_rt_scalecom_reduce_scatter_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i32, i64, f32, i64, f32, f32, i32, i32, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @compressed
// CHECK:       %[[SHARD:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK-DAG:   %[[K:.*]] = arith.constant 6 : i64
// CHECK-DAG:   %[[BETA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:   %[[WARMUP:.*]] = arith.constant 100 : i64
// CHECK-DAG:   %[[CLIP:.*]] = arith.constant 2.500000e-01 : f32
// CHECK:       %[[MOMENTUM:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:  %[[NESTEROV:.*]] = arith.constant 0 : i32
// CHECK-NEXT:  %[[DENSE:.*]] = arith.constant 0 : i32
// CHECK:       call @gradcomm_rt_scalecom_reduce_scatter_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[K]], %{{.*}}, %{{.*}}, %[[BETA]], %[[WARMUP]], %[[CLIP]], %[[MOMENTUM]], %[[NESTEROV]], %[[DENSE]], %{{.*}})
// CHECK-NOT:   gradcomm.
func.func @compressed(%g: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 6 selection = exact {warmup_steps = 100 : i64, clip = 0.25 : f32}
      : tensor<32x16xf32> -> tensor<6xf32>, tensor<6xi64>
  %s = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0]
      reduction = sum scatter_axis = 0
      : tensor<6xf32>, tensor<6xi64> -> tensor<8x16xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x16xf32>, tensor<6xi64>
  return %s : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x16xf32>

// The values' reduce-scatter has no call of its own.
func.func @unfused(%g: tensor<32x16xf32>) -> (tensor<8x16xf32>, tensor<6xf32>) {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 6 selection = exact
      : tensor<32x16xf32> -> tensor<6xf32>, tensor<6xi64>
  // expected-error @+2 {{lowers only as part of the fused step}}
  // expected-error @+1 {{failed to legalize operation 'gradcomm.sparse_reduce_scatter'}}
  %s = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0]
      reduction = sum scatter_axis = 0
      : tensor<6xf32>, tensor<6xi64> -> tensor<8x16xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x16xf32>, tensor<6xi64>
  return %s, %v : tensor<8x16xf32>, tensor<6xf32>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x16xf32>

func.func @ramp(%g: tensor<32x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{feeds a sparse_reduce_scatter, whose runtime call has a dense warm-up only ('warmup_ramp_from' is not built for it)}}
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 6 selection = exact {warmup_steps = 10 : i64, warmup_ramp_from = 2.0 : f32}
      : tensor<32x16xf32> -> tensor<6xf32>, tensor<6xi64>
  %s = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0]
      reduction = sum scatter_axis = 0
      : tensor<6xf32>, tensor<6xi64> -> tensor<8x16xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x16xf32>, tensor<6xi64>
  return %s : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x16xf32>
gradcomm.state @b_grad : tensor<8xf32>

// Momentum correction (Nesterov) and a gradient kept dense for its
// velocity reach the runtime's call.
// CHECK-LABEL: func.func @momentum
// CHECK:       %[[MOMENTUM:.*]] = arith.constant 0.899999976 : f32
// CHECK-NEXT:  %[[NESTEROV:.*]] = arith.constant 1 : i32
// CHECK-NEXT:  %[[DENSE:.*]] = arith.constant 0 : i32
// CHECK:       call @gradcomm_rt_scalecom_reduce_scatter_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MOMENTUM]], %[[NESTEROV]], %[[DENSE]], %{{.*}})
// CHECK:       %[[MOMENTUM:.*]] = arith.constant 0.899999976 : f32
// CHECK-NEXT:  %[[NESTEROV:.*]] = arith.constant 0 : i32
// CHECK-NEXT:  %[[DENSE:.*]] = arith.constant 1 : i32
// CHECK:       call @gradcomm_rt_scalecom_reduce_scatter_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MOMENTUM]], %[[NESTEROV]], %[[DENSE]], %{{.*}})
func.func @momentum(%g: tensor<32x16xf32>, %b: tensor<8xf32>)
    -> (tensor<8x16xf32>, tensor<2xf32>) {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 6 selection = exact {momentum = 0.9 : f32, nesterov}
      : tensor<32x16xf32> -> tensor<6xf32>, tensor<6xi64>
  %s = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0]
      reduction = sum scatter_axis = 0
      : tensor<6xf32>, tensor<6xi64> -> tensor<8x16xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x16xf32>, tensor<6xi64>
  %bv, %bi = gradcomm.cltk_compress %b state @b_grad on @grid grid_axes = [0]
      k = 8 selection = exact {momentum = 0.9 : f32, dense}
      : tensor<8xf32> -> tensor<8xf32>, tensor<8xi64>
  %bs = gradcomm.sparse_reduce_scatter %bv, %bi on @grid grid_axes = [0]
      reduction = sum scatter_axis = 0
      : tensor<8xf32>, tensor<8xi64> -> tensor<2xf32>
  gradcomm.memory_update %b, %bi state @b_grad beta = 0.5
      : tensor<8xf32>, tensor<8xi64>
  return %s, %bs : tensor<8x16xf32>, tensor<2xf32>
}

// -----

shard.grid @grid(shape = 4)

func.func @columns(%g: tensor<32x16xf32>) -> tensor<32x4xf32> {
  // expected-error @+1 {{cannot be lowered to the runtime: it scatters along axis 1; the runtime's shards are runs of the flat buffer (axis 0)}}
  %s = shard.reduce_scatter %g on @grid grid_axes = [0] scatter_axis = 1
      : tensor<32x16xf32> -> tensor<32x4xf32>
  return %s : tensor<32x4xf32>
}
