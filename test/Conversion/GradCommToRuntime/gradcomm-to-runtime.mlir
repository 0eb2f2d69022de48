// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime -split-input-file | FileCheck %s

// The three ScaleCom ops of one state fuse into one runtime call; the
// gradient is read-only, the output a fresh buffer.

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x32xf32>

// CHECK-NOT:   gradcomm.state
// CHECK-NOT:   shard.grid
// CHECK-DAG:   llvm.mlir.global internal constant @__gradcomm_str_w_grad("w_grad\00")
// CHECK-DAG:   func.func private @gradcomm_rt_scalecom_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i32, i64, f32, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   func.func private @gradcomm_rt_check(i32)
// CHECK-DAG:   func.func private @gradcomm_rt_expect_group_size(i64)
// CHECK-LABEL: func.func @fused
// CHECK:       %[[N:.*]] = arith.constant 4 : i64
// CHECK:       call @gradcomm_rt_expect_group_size(%[[N]])
// CHECK:       %[[G:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<32x32xf32> to memref<32x32xf32>
// CHECK:       %[[OUT:.*]] = memref.alloc() : memref<32x32xf32>
// CHECK:       %[[NAME:.*]] = llvm.mlir.addressof @__gradcomm_str_w_grad
// CHECK-DAG:   %[[GU:.*]] = memref.cast %[[G]] : memref<32x32xf32> to memref<*xf32>
// CHECK-DAG:   %[[OU:.*]] = memref.cast %[[OUT]] : memref<32x32xf32> to memref<*xf32>
// CHECK-DAG:   %[[K:.*]] = arith.constant 64 : i64
// CHECK-DAG:   %[[SEL:.*]] = arith.constant 1 : i32
// CHECK-DAG:   %[[CHUNK:.*]] = arith.constant 16 : i64
// CHECK-DAG:   %[[BETA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:   %[[AVG:.*]] = arith.constant 1 : i32
// CHECK:       %[[S:.*]] = call @gradcomm_rt_scalecom_f32(%[[NAME]], %[[GU]], %[[OU]], %[[K]], %[[SEL]], %[[CHUNK]], %[[BETA]], %[[AVG]])
// CHECK:       call @gradcomm_rt_check(%[[S]])
// CHECK:       %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK:       return %[[R]]
// CHECK-NOT:   gradcomm.
func.func @fused(%g: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = chunk chunk_size = 16
      : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x32xf32>, tensor<64xi64>
  return %r : tensor<32x32xf32>
}

// -----

// Indices used by something else: lowered op by op.

shard.grid @grid(shape = 2)
gradcomm.state @w_grad : tensor<16xf32>

// CHECK-LABEL: func.func @unfused
// CHECK:       call @gradcomm_rt_cltk_compress_f32
// CHECK:       call @gradcomm_rt_check
// CHECK:       call @gradcomm_rt_sparse_all_reduce_f32
// CHECK:       call @gradcomm_rt_memory_update_f32
// CHECK-NOT:   gradcomm_rt_scalecom_f32
func.func @unfused(%g: tensor<16xf32>) -> (tensor<16xf32>, tensor<4xi64>) {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 4 selection = exact
      : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = sum : tensor<4xf32>, tensor<4xi64> -> tensor<16xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 1.0
      : tensor<16xf32>, tensor<4xi64>
  return %r, %i : tensor<16xf32>, tensor<4xi64>
}

// -----

// Dense all-reduce and gossip work in place: a writable to_buffer of the
// input, so bufferization reuses the input's buffer when it can. (The
// all-reduce result reaches the return through a gossip exchange, not
// elementwise ops, so it is named after its function.)

shard.grid @grid(shape = 4)
gradcomm.state @x_gossip

// CHECK-LABEL: func.func @in_place
// CHECK-SAME:  (%[[W:.*]]: tensor<8xf32>, %[[G:.*]]: tensor<8xf32>)
// CHECK:       %[[B:.*]] = bufferization.to_buffer %[[G]] : tensor<8xf32> to memref<8xf32>
// CHECK:       addressof @__gradcomm_str_in_place_all_reduce_0
// CHECK:       call @gradcomm_rt_dense_all_reduce_f32
// CHECK:       bufferization.to_tensor %[[B]] restrict writable
// CHECK:       %[[X:.*]] = bufferization.to_buffer %{{.*}} : tensor<8xf32> to memref<8xf32>
// CHECK:       call @gradcomm_rt_gossip_exchange_f32
// CHECK:       bufferization.to_tensor %[[X]] restrict writable
func.func @in_place(%w: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %u = arith.subf %w, %r : tensor<8xf32>
  %x = gradcomm.gossip_exchange %u state @x_gossip on @grid grid_axes = [0]
      schedule = ring mixing = 0.5 seed = 0 period = 1 : tensor<8xf32>
  return %x : tensor<8xf32>
}

// -----

// Elastic averaging also works in place on the updated parameter, with
// alpha as f32 and the period as i64.

shard.grid @grid(shape = 4)
gradcomm.state @w_easgd : tensor<8xf32>

// CHECK-LABEL: func.func @elastic
// CHECK:       %[[X:.*]] = bufferization.to_buffer %{{.*}} : tensor<8xf32> to memref<8xf32>
// CHECK:       %[[ALPHA:.*]] = arith.constant 2.250000e-01 : f32
// CHECK:       %[[PERIOD:.*]] = arith.constant 4 : i64
// CHECK:       call @gradcomm_rt_elastic_average_f32(%{{.*}}, %{{.*}}, %[[ALPHA]], %[[PERIOD]])
// CHECK:       bufferization.to_tensor %[[X]] restrict writable
func.func @elastic(%w: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %u = arith.subf %w, %g : tensor<8xf32>
  %x = gradcomm.elastic_average %u state @w_easgd on @grid grid_axes = [0]
      alpha = 0.225 period = 4 : tensor<8xf32>
  return %x : tensor<8xf32>
}

// -----

// Process queries of partitioned code become the runtime's rank and size.

shard.grid @grid(shape = 1x4)

// CHECK-LABEL: func.func @queries
// CHECK-DAG:   %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-DAG:   %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-DAG:   %[[RANK:.*]] = call @gradcomm_rt_rank() : () -> i64
// CHECK-DAG:   %[[IDX:.*]] = arith.index_cast %[[RANK]] : i64 to index
// CHECK:       return %[[ZERO]], %[[IDX]], %{{.*}}, %[[FOUR]]
func.func @queries() -> (index, index, index, index) {
  %a, %b = shard.process_multi_index on @grid : index, index
  %l = shard.process_linear_index on @grid : index
  %s = shard.grid_shape @grid axes = [1] : index
  return %a, %b, %l, %s : index, index, index, index
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<16xf32>

// CHECK-LABEL: func.func @baseline
// CHECK:       bufferization.to_buffer %{{.*}} read_only
// CHECK:       call @gradcomm_rt_local_topk_all_gather_f32
func.func @baseline(%g: tensor<16xf32>) -> tensor<16xf32> {
  %r = gradcomm.local_topk_all_gather %g state @w_grad on @grid grid_axes = [0]
      k = 4 reduction = average : tensor<16xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}
