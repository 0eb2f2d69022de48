// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime -split-input-file | FileCheck %s
// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime=on-error=return -split-input-file | FileCheck %s --check-prefix=RECORD

// A collective over part of its grid runs in the runtime group of its axes:
// the group is selected before the call ("SHAPE:AXES") and every rank
// ("") after it. The step checks the job has the whole grid's processes.

shard.grid @grid(shape = 2x2)

// CHECK-DAG:   llvm.mlir.global internal constant @__gradcomm_str__2x2_0("2x2:0\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__gradcomm_str__2x2_1("2x2:1\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__gradcomm_str__("\00")
// CHECK-LABEL: func.func @step(
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK-NEXT:    call @gradcomm_rt_expect_group_size(%[[FOUR]]) : (i64) -> ()
// CHECK:         %[[COLUMN:.*]] = llvm.mlir.addressof @__gradcomm_str__2x2_0 : !llvm.ptr
// CHECK-NEXT:    %[[S0:.*]] = call @gradcomm_rt_use_group(%[[COLUMN]])
// CHECK-NEXT:    call @gradcomm_rt_check(%[[S0]])
// CHECK-NEXT:    %[[S1:.*]] = call @gradcomm_rt_dense_all_reduce_f32
// CHECK-NEXT:    call @gradcomm_rt_check(%[[S1]])
// CHECK-NEXT:    %[[EVERY:.*]] = llvm.mlir.addressof @__gradcomm_str__ : !llvm.ptr
// CHECK-NEXT:    %[[S2:.*]] = call @gradcomm_rt_use_group(%[[EVERY]])
// CHECK-NEXT:    call @gradcomm_rt_check(%[[S2]])
// CHECK:         %[[ROW:.*]] = llvm.mlir.addressof @__gradcomm_str__2x2_1 : !llvm.ptr
// CHECK-NEXT:    call @gradcomm_rt_use_group(%[[ROW]])
// CHECK:         call @gradcomm_rt_dense_all_reduce_f32
// CHECK:         call @gradcomm_rt_use_group(
// Both axes: every rank, no group selected.
// CHECK-NOT:     gradcomm_rt_use_group
// CHECK:         call @gradcomm_rt_dense_all_reduce_f32
// CHECK-NOT:     gradcomm_rt_use_group
// CHECK:         return

// on-error=return: the selections' statuses are recorded like any call's.
// RECORD-LABEL: func.func @step(
// RECORD:         %[[S:.*]] = call @gradcomm_rt_use_group(
// RECORD-NEXT:    call @gradcomm_rt_record(%[[S]])
func.func @step(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %columns = shard.all_reduce %x on @grid grid_axes = [0] reduction = sum
      : tensor<8xf32> -> tensor<8xf32>
  %rows = shard.all_reduce %x on @grid grid_axes = [1] reduction = sum
      : tensor<8xf32> -> tensor<8xf32>
  %all = shard.all_reduce %x on @grid grid_axes = [1, 0] reduction = sum
      : tensor<8xf32> -> tensor<8xf32>
  return %columns, %rows, %all : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}


// -----

// A process's coordinates on a 2x3 grid (row-major: rank = 3 row +
// column).
shard.grid @grid(shape = 2x3)

// CHECK-LABEL: func.func @coordinates
// CHECK:         %[[RANK:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK-NEXT:    %[[THREE:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[ROWQ:.*]] = arith.divui %[[RANK]], %[[THREE]]
// CHECK-NEXT:    %[[ROW:.*]] = arith.remui %[[ROWQ]], %[[TWO]]
// CHECK:         %[[RANK2:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[THREE2:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[COLQ:.*]] = arith.divui %[[RANK2]], %[[ONE]]
// CHECK-NEXT:    %[[COL:.*]] = arith.remui %[[COLQ]], %[[THREE2]]
// CHECK-NEXT:    return %[[ROW]], %[[COL]]
func.func @coordinates() -> (index, index) {
  %r, %c = shard.process_multi_index on @grid : index, index
  return %r, %c : index, index
}
