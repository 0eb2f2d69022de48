// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime -split-input-file -verify-diagnostics | FileCheck %s

// bf16 and f16 gradients (mixed precision) call the runtime's 16-bit entry
// points: their buffers stay 16-bit, the runtime widens them, sends the
// values in the same 16 bits and narrows the result back. The ScaleCom
// step is always the recipe's call (its wire is the gradient's type).

shard.grid @grid(shape = 4)

// CHECK-DAG:   func.func private @gradcomm_rt_dense_all_reduce_bf16(!llvm.ptr, memref<*xbf16>, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   func.func private @gradcomm_rt_dense_all_reduce_f16(!llvm.ptr, memref<*xf16>, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @dense
// CHECK:       bufferization.to_buffer %{{.*}} : tensor<64xbf16> to memref<64xbf16>
// CHECK:       call @gradcomm_rt_dense_all_reduce_bf16(
// CHECK:       bufferization.to_buffer %{{.*}} : tensor<8x8xf16> to memref<8x8xf16>
// CHECK:       call @gradcomm_rt_dense_all_reduce_f16(
func.func @dense(%a: tensor<64xbf16>, %b: tensor<8x8xf16>) -> (tensor<64xbf16>, tensor<8x8xf16>) {
  %ra = shard.all_reduce %a on @grid grid_axes = [0] reduction = average
      : tensor<64xbf16> -> tensor<64xbf16>
  %rb = shard.all_reduce %b on @grid grid_axes = [0] reduction = sum
      : tensor<8x8xf16> -> tensor<8x8xf16>
  return %ra, %rb : tensor<64xbf16>, tensor<8x8xf16>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x32xf32>

// CHECK-DAG:   func.func private @gradcomm_rt_scalecom_recipe_bf16(!llvm.ptr, memref<*xbf16>, memref<*xbf16>, i64, i32, i64, f32, i64, f32, f32, f32, i32, i32, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @scalecom
// CHECK:       %[[OUT:.*]] = memref.alloc() : memref<32x32xbf16>
// CHECK:       call @gradcomm_rt_scalecom_recipe_bf16(
// CHECK:       bufferization.to_tensor %[[OUT]]
// CHECK-NOT:   gradcomm.
func.func @scalecom(%g: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = exact
      : tensor<32x32xbf16> -> tensor<64xf32>, tensor<64xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xbf16>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x32xbf16>, tensor<64xi64>
  return %r : tensor<32x32xbf16>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<16xf32>

// The unfused ops take f32 only.
func.func @unfused(%g: tensor<16xbf16>) -> (tensor<16xbf16>, tensor<4xf32>) {
  // expected-error @+1 {{with a bf16 or f16 gradient lowers only as the fused step with a reduction of its element type (values used more than once)}}
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 4 selection = exact
      : tensor<16xbf16> -> tensor<4xf32>, tensor<4xi64>
  // expected-error @+1 {{with a bf16 or f16 tensor lowers only as part of the fused step of a cltk_compress of that type (values used more than once)}}
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = sum : tensor<4xf32>, tensor<4xi64> -> tensor<16xbf16>
  // expected-error @+1 {{with a bf16 or f16 tensor lowers only as part of the fused step}}
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<16xbf16>, tensor<4xi64>
  return %r, %v : tensor<16xbf16>, tensor<4xf32>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<16xf32>

// A bf16 result from an f32 gradient's values.
func.func @mixed(%g: tensor<16xf32>) -> tensor<16xbf16> {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 4 selection = exact
      : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  // expected-error @+1 {{the cltk_compress gradient's element type differs}}
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = sum : tensor<4xf32>, tensor<4xi64> -> tensor<16xbf16>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<16xf32>, tensor<4xi64>
  return %r : tensor<16xbf16>
}

// -----

// A 16-bit replica (a bf16 or f16 model's weight): gossip and EASGD call
// the 16-bit entry points, which exchange it in its own bits; EASGD's
// center stays f32.

shard.grid @grid(shape = 4)
gradcomm.state @w_gossip
gradcomm.state @v_easgd : tensor<8x8xf32>

// CHECK-DAG:   func.func private @gradcomm_rt_gossip_exchange_bf16(!llvm.ptr, memref<*xbf16>, i32, f32, i64, i64) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   func.func private @gradcomm_rt_elastic_average_f16(!llvm.ptr, memref<*xf16>, f32, i64) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @exchanges
// CHECK:       call @gradcomm_rt_gossip_exchange_bf16(
// CHECK:       call @gradcomm_rt_elastic_average_f16(
// CHECK-NOT:   gradcomm.
func.func @exchanges(%w: tensor<64xbf16>, %v: tensor<8x8xf16>)
    -> (tensor<64xbf16>, tensor<8x8xf16>) {
  %x = gradcomm.gossip_exchange %w state @w_gossip on @grid grid_axes = [0]
      schedule = ring mixing = 0.5 seed = 0 period = 1 : tensor<64xbf16>
  %y = gradcomm.elastic_average %v state @v_easgd on @grid grid_axes = [0]
      alpha = 0.2 period = 1 : tensor<8x8xf16>
  return %x, %y : tensor<64xbf16>, tensor<8x8xf16>
}

// -----

// Local top-k on a 16-bit gradient: the 16-bit entry point (its k values
// travel in 16 bits; the memory is f32).

shard.grid @grid(shape = 4)
gradcomm.state @g_grad : tensor<256xf32>

// CHECK-DAG:   func.func private @gradcomm_rt_local_topk_all_gather_bf16(!llvm.ptr, memref<*xbf16>, memref<*xbf16>, i64, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @local_topk
// CHECK:       call @gradcomm_rt_local_topk_all_gather_bf16(
// CHECK-NOT:   gradcomm.
func.func @local_topk(%g: tensor<256xbf16>) -> tensor<256xbf16> {
  %r = gradcomm.local_topk_all_gather %g state @g_grad on @grid
      grid_axes = [0] k = 8 reduction = average
      : tensor<256xbf16> -> tensor<256xbf16>
  return %r : tensor<256xbf16>
}

// -----

// Sharded training in 16 bits: the dense reduce-scatter, the parameter
// all-gather and the compressed reduce-scatter call their 16-bit entry
// points (the values travel in the tensors' own 16 bits; the memory is
// f32).

shard.grid @grid(shape = 4)
gradcomm.state @s_grad : tensor<256xf32>
gradcomm.state @h_grad : tensor<256xf32>

// CHECK-DAG:   func.func private @gradcomm_rt_reduce_scatter_bf16(!llvm.ptr, memref<*xbf16>, memref<*xbf16>, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   func.func private @gradcomm_rt_reduce_scatter_f16(!llvm.ptr, memref<*xf16>, memref<*xf16>, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   func.func private @gradcomm_rt_all_gather_bf16(!llvm.ptr, memref<*xbf16>, memref<*xbf16>) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   func.func private @gradcomm_rt_scalecom_reduce_scatter_bf16(!llvm.ptr, memref<*xbf16>, memref<*xbf16>, i64, i32, i64, f32, i64, f32, f32, i32, i32, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   func.func private @gradcomm_rt_scalecom_reduce_scatter_f16(!llvm.ptr, memref<*xf16>, memref<*xf16>, i64, i32, i64, f32, i64, f32, f32, i32, i32, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @sharded
// CHECK:       memref.alloc() : memref<16xbf16>
// CHECK:       call @gradcomm_rt_reduce_scatter_bf16(
// CHECK:       memref.alloc() : memref<4x4xf16>
// CHECK:       call @gradcomm_rt_reduce_scatter_f16(
// CHECK:       memref.alloc() : memref<64xbf16>
// CHECK:       call @gradcomm_rt_all_gather_bf16(
// CHECK:       memref.alloc() : memref<64xbf16>
// CHECK:       call @gradcomm_rt_scalecom_reduce_scatter_bf16(
// CHECK:       memref.alloc() : memref<64xf16>
// CHECK:       call @gradcomm_rt_scalecom_reduce_scatter_f16(
// CHECK-NOT:   gradcomm.
func.func @sharded(%a: tensor<64xbf16>, %b: tensor<16x4xf16>,
                   %p: tensor<16xbf16>, %g: tensor<256xbf16>,
                   %h: tensor<256xf16>)
    -> (tensor<16xbf16>, tensor<4x4xf16>, tensor<64xbf16>, tensor<64xbf16>,
        tensor<64xf16>) {
  %ra = shard.reduce_scatter %a on @grid grid_axes = [0] reduction = average
      scatter_axis = 0 : tensor<64xbf16> -> tensor<16xbf16>
  %rb = shard.reduce_scatter %b on @grid grid_axes = [0] reduction = sum
      scatter_axis = 0 : tensor<16x4xf16> -> tensor<4x4xf16>
  %full = shard.all_gather %p on @grid grid_axes = [0] gather_axis = 0
      : tensor<16xbf16> -> tensor<64xbf16>
  %v, %i = gradcomm.cltk_compress %g state @s_grad on @grid grid_axes = [0]
      k = 8 selection = exact
      : tensor<256xbf16> -> tensor<8xf32>, tensor<8xi64>
  %s = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0]
      reduction = average scatter_axis = 0
      : tensor<8xf32>, tensor<8xi64> -> tensor<64xbf16>
  gradcomm.memory_update %g, %i state @s_grad beta = 0.5
      : tensor<256xbf16>, tensor<8xi64>
  %vh, %ih = gradcomm.cltk_compress %h state @h_grad on @grid grid_axes = [0]
      k = 8 selection = exact
      : tensor<256xf16> -> tensor<8xf32>, tensor<8xi64>
  %sh = gradcomm.sparse_reduce_scatter %vh, %ih on @grid grid_axes = [0]
      reduction = sum scatter_axis = 0
      : tensor<8xf32>, tensor<8xi64> -> tensor<64xf16>
  gradcomm.memory_update %h, %ih state @h_grad beta = 0.5
      : tensor<256xf16>, tensor<8xi64>
  return %ra, %rb, %full, %s, %sh
      : tensor<16xbf16>, tensor<4x4xf16>, tensor<64xbf16>, tensor<64xbf16>,
        tensor<64xf16>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s_grad : tensor<256xf32>

// A compressed reduce-scatter whose shard is not the gradient's type.
func.func @sharded_mixed(%g: tensor<256xbf16>) -> tensor<64xf32> {
  // expected-error @+1 {{with a bf16 or f16 gradient lowers only as the fused step with a reduction of its element type (the reduction's result differs)}}
  %v, %i = gradcomm.cltk_compress %g state @s_grad on @grid grid_axes = [0]
      k = 8 selection = exact
      : tensor<256xbf16> -> tensor<8xf32>, tensor<8xi64>
  %s = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0]
      reduction = sum scatter_axis = 0
      : tensor<8xf32>, tensor<8xi64> -> tensor<64xf32>
  gradcomm.memory_update %g, %i state @s_grad beta = 0.5
      : tensor<256xbf16>, tensor<8xi64>
  return %s : tensor<64xf32>
}

// -----

shard.grid @grid(shape = 4)

// A reduce-scatter that changes the element type.
func.func @rs_cast(%a: tensor<64xbf16>) -> tensor<16xf32> {
  // expected-error @+1 {{it reduce-scatters static f32, bf16 or f16 tensors only, input and result of one type}}
  %r = shard.reduce_scatter %a on @grid grid_axes = [0] reduction = sum
      scatter_axis = 0 : tensor<64xbf16> -> tensor<16xf32>
  return %r : tensor<16xf32>
}
