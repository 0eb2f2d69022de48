//===- Passes.td - GradComm conversion passes --------------*- tablegen -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_CONVERSION_PASSES_TD
#define GRADCOMM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGradCommToRuntimePass
    : Pass<"convert-gradcomm-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower gradcomm ops, shard.all_reduce and shard process "
                "queries to calls into libgradcomm_runtime";
  let description = [{
    Runs on tensor IR, before bufferization. Every communication op becomes a
    call to a private `func.func @gradcomm_rt_<op>` declared with
    `llvm.emit_c_interface` (the runtime's `_mlir_ciface_gradcomm_rt_<op>`,
    runtime/include/gradcomm/runtime_memref.h), on buffers obtained with
    `bufferization.to_buffer` and turned back with `bufferization.to_tensor`,
    so One-Shot Bufferize places them:

    * ops that update a tensor in place (dense all-reduce, gossip) take a
      writable `to_buffer` of their input: bufferization reuses the input's
      buffer when nothing reads it later (a gradient argument is reduced in
      place, like a DDP communication hook) and copies it otherwise;
    * ops that read a gradient take a `read_only` buffer; their outputs are
      fresh buffers;
    * `cltk_compress` + `sparse_all_reduce` + `memory_update` of one state
      fuse into one `gradcomm_rt_scalecom_f32` call (one pass over the
      memory per step); any other arrangement lowers op by op.

    Every call's status goes to `gradcomm_rt_check`, which stops the job with
    the runtime's message (op, rank, cause) on failure. With
    `on-error=return` the status goes to `gradcomm_rt_record` instead,
    which keeps the step's first failure for `gradcomm_take_step_status()`;
    later runtime calls of a failed step return that status at once
    without communicating (every rank got the same status, so every rank
    skips the same calls), and `gradcomm-guard-failed-steps` keeps the
    step's remaining writes from happening. Each function that
    communicates first calls `gradcomm_rt_expect_group_size` with the static
    size of its grid, so a step compiled for 4 ranks refuses to run on 2.
    `gradcomm.state` and `shard.grid` declarations are removed (the runtime
    owns the state, by name); `shard.process_multi_index`,
    `shard.process_linear_index` and `shard.grid_shape` become the runtime's
    rank and size. Only one-dimensional groups (grids whose other axes have
    size 1) are supported; anything else is a diagnostic.

    Example:

    ```mlir
    %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
        : tensor<64xf32> -> tensor<64xf32>
    ```

    becomes

    ```mlir
    %b = bufferization.to_buffer %g : tensor<64xf32> to memref<64xf32>
    %u = memref.cast %b : memref<64xf32> to memref<*xf32>
    %s = func.call @gradcomm_rt_dense_all_reduce_f32(%name, %u, %c1)
        : (!llvm.ptr, memref<*xf32>, i32) -> i32
    func.call @gradcomm_rt_check(%s) : (i32) -> ()
    %r = bufferization.to_tensor %b restrict writable
        : memref<64xf32> to tensor<64xf32>
    ```
  }];
  let options = [
    Option<"onError", "on-error", "std::string", "\"abort\"",
           "What a failed runtime call does: 'abort' (gradcomm_rt_check "
           "ends the job) or 'return' (the step returns, the status is "
           "kept for gradcomm_take_step_status)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // GRADCOMM_CONVERSION_PASSES_TD
