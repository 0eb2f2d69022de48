// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime -split-input-file -verify-diagnostics | FileCheck %s

// Sharded training's parameter all-gather (ZeRO-3, FSDP) stays dense: one
// runtime call that reads the shard and writes a fresh whole parameter.

shard.grid @grid(shape = 4)

// CHECK-DAG:   func.func private @gradcomm_rt_all_gather_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   llvm.mlir.global internal constant @__gradcomm_str_gather_all_gather_0("gather_all_gather_0\00")
// CHECK-LABEL: func.func @gather
// CHECK-SAME:  (%[[W:.*]]: tensor<8x16xf32>)
// CHECK:       bufferization.to_buffer %[[W]] read_only : tensor<8x16xf32> to memref<8x16xf32>
// CHECK:       %[[WHOLE:.*]] = memref.alloc() : memref<32x16xf32>
// CHECK:       %[[STATUS:.*]] = call @gradcomm_rt_all_gather_f32(
// CHECK:       call @gradcomm_rt_check(%[[STATUS]])
// CHECK:       bufferization.to_tensor %[[WHOLE]]
func.func @gather(%w: tensor<8x16xf32>) -> tensor<32x16xf32> {
  %full = shard.all_gather %w on @grid grid_axes = [0] gather_axis = 0
      : tensor<8x16xf32> -> tensor<32x16xf32>
  return %full : tensor<32x16xf32>
}

// -----

shard.grid @grid(shape = 4)

func.func @columns(%w: tensor<32x4xf32>) -> tensor<32x16xf32> {
  // expected-error @+1 {{cannot be lowered to the runtime: it gathers along axis 1; the runtime's shards are runs of the flat buffer (axis 0)}}
  %full = shard.all_gather %w on @grid grid_axes = [0] gather_axis = 1
      : tensor<32x4xf32> -> tensor<32x16xf32>
  return %full : tensor<32x16xf32>
}

// -----

shard.grid @grid(shape = 4)

func.func @f64(%w: tensor<8x16xf64>) -> tensor<32x16xf64> {
  // expected-error @+1 {{cannot be lowered to the runtime: it all-gathers static f32, bf16 or f16 tensors only, input and result of one type}}
  %full = shard.all_gather %w on @grid grid_axes = [0] gather_axis = 0
      : tensor<8x16xf64> -> tensor<32x16xf64>
  return %full : tensor<32x16xf64>
}
