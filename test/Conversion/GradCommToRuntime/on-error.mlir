// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime=on-error=return | FileCheck %s --check-prefix=RECORD
// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime | FileCheck %s --check-prefix=ABORT
// RUN: gradcomm-opt %s '--gradcomm-to-llvm-pipeline=on-error=return' | FileCheck %s --check-prefix=LLVM
// RUN: not gradcomm-opt %s --convert-gradcomm-to-runtime=on-error=ignore 2>&1 | FileCheck %s --check-prefix=BAD

// on-error=return: statuses go to gradcomm_rt_record, and no
// gradcomm_rt_check is left; the default still stops the job.

shard.grid @grid(shape = 2)

// RECORD-NOT:   gradcomm_rt_check
// RECORD:       func.func private @gradcomm_rt_record(i32)
// RECORD-LABEL: func.func @step(
// RECORD:         %[[S:.*]] = call @gradcomm_rt_dense_all_reduce_f32
// RECORD-NEXT:    call @gradcomm_rt_record(%[[S]]) : (i32) -> ()
// RECORD-NOT:   gradcomm_rt_check

// ABORT-NOT:    gradcomm_rt_record
// ABORT:        call @gradcomm_rt_check

// Through the whole pipeline: the runtime call (with its record) and the
// update inside its guard are outlined as at the top level.
// LLVM-LABEL: llvm.func internal @step__comm_0(
// LLVM:         llvm.call @gradcomm_rt_dense_all_reduce_f32
// LLVM:         llvm.call @gradcomm_rt_record
// LLVM-LABEL: llvm.func internal @step__kernel_1(
// LLVM-LABEL: llvm.func @step(
// LLVM:         llvm.call @step__comm_0
// LLVM:         llvm.call @gradcomm_rt_step_ok
// LLVM:         llvm.cond_br
// LLVM:         llvm.call @step__kernel_1

// BAD: on-error must be 'abort' or 'return', got 'ignore'
func.func @step(%w: tensor<64xf32>, %g: tensor<64xf32>) -> tensor<64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %u = arith.subf %w, %r : tensor<64xf32>
  return %u : tensor<64xf32>
}
