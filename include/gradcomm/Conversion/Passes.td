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

def ConvertLinalgToBlasPass
    : Pass<"convert-linalg-to-blas", "::mlir::ModuleOp"> {
  let summary = "Float32 matrix products as calls of libgradcomm_blas";
  let description = [{
    Loops sum each output of a matrix product in one float chain and stream
    the operands from memory once per output row; a blocked BLAS kernel
    keeps tiles in cache and registers. This pass replaces each
    `linalg.generic` on buffers that computes `C[b, m, n] += A[b, m, k] *
    B[b, k, n]` in float32 (the batch dimension optional; each operand
    indexed by exactly its dimensions, in any order; the body one
    multiplication and one addition) with a call of libgradcomm_blas's
    `gradcomm_blas_matmul_f32` (serial OpenBLAS sgemm, C += A B;
    blas/include/gradcomm/blas.h), a library of its own beside the
    communication runtime. The
    operands become rank-3 strided views: `memref.transpose` into the
    (b, row, col) order, `memref.expand_shape` for a missing batch, and a
    cast to the dynamic strided type the function takes.

    A product is left as loops when it has fewer than `min-multiply-adds`
    terms (a call costs more than a small loop nest), when an operand is not
    row- or column-major within its batch or has an extent or stride past
    32 bits (BLAS's integers), or when the output buffer may
    overlap an input (it must be a fresh allocation, or an argument marked
    `llvm.noalias` by gradcomm-outline-kernels). Products summed in float64
    (the exporter's long convolution sums before im2col) are not matched.

    BLAS sums in a different order than the loops, so results change in the
    last bits; the float64 criterion of docs/export.md judges them.

    ```mlir
    linalg.generic {indexing_maps = [(m, n, k) -> (k, m), (m, n, k) -> (k, n),
                                     (m, n, k) -> (m, n)], ...}
        ins(%a, %b : memref<64x32xf32>, memref<64x16xf32>)
        outs(%c : memref<32x16xf32>) { mulf, addf }
    // becomes
    %at = memref.transpose %a (d0, d1) -> (d1, d0) : ...
    %a3 = memref.expand_shape %at [[0, 1], [2]] ... to memref<1x32x64xf32, ...>
    ...
    func.call @gradcomm_blas_matmul_f32(%a3c, %b3c, %c3c)
    ```
  }];
  let options = [
    Option<"minMultiplyAdds", "min-multiply-adds", "int64_t", "4096",
           "Products with fewer multiply-adds (all loop extents multiplied) "
           "stay loops">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // GRADCOMM_CONVERSION_PASSES_TD
