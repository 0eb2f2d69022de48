//===- Passes.td - GradComm's dialect-independent passes ---*- tablegen -*-===//
//
// Part of the GradComm project.
//
// Passes of the compile pipeline that use no GradComm op or attribute:
// they work on upstream dialects (shard, linalg, func, memref, arith, LLVM)
// and live apart from the dialect's own (Dialect/GradComm/Transforms).
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_TRANSFORMS_PASSES
#define GRADCOMM_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def VerifyShardingsPass
    : Pass<"gradcomm-verify-shardings", "::mlir::ModuleOp"> {
  let summary = "Refuse sharding annotations upstream partitioning crashes on";
  let description = [{
    Runs before upstream `sharding-propagation` and `shard-partition` in the
    GradComm pipelines and in `gradcomm-compile`. Upstream `shard-partition`
    (MLIR 22.1) segfaults on a value that is annotated for its users
    (`shard.shard ... annotate_for_users`) with two different shardings.
    This pass turns that input into an error that names both annotations.
    Nothing else is changed.

    ```mlir
    %a = shard.shard %x to %s0 annotate_for_users : tensor<16x64xf32>
    %b = shard.shard %x to %s1 annotate_for_users : tensor<16x64xf32>
    // error: gradcomm: this value is annotated for its users with two
    // different shardings; ...
    ```

    With `propagated=true` it runs between propagation and partitioning and
    refuses a tensor that propagation left without a sharding: a value that
    depends on no annotated value, such as a returned `tensor.empty`.
    Upstream `shard-partition` segfaults on those too.
  }];
  let options = [
    Option<"propagated", "propagated", "bool", /*default=*/"false",
           "Check the propagated IR: every tensor result has a sharding">
  ];
}

def OwnMemrefRuntimePass
    : Pass<"gradcomm-own-memref-runtime", "::mlir::ModuleOp"> {
  let summary = "Point lowered code's allocation, free and strided-copy "
                "calls at the GradComm runtime's own symbols";
  let description = [{
    Runs after `finalize-memref-to-llvm` (with `use-generic-functions`),
    whose calls carry MLIR's c_runner_utils names. A process that loads
    both that library and the GradComm runtime binds those names to
    whichever library came first, so a compiled step could receive host
    memory on the CUDA backend, or MLIR's own code GradComm's device
    buffers. The runtime exports its own names instead
    (`runtime/include/gradcomm/runtime_memref.h`), and this pass renames
    the declarations and every call:

    | lowered code calls | renamed to |
    |---|---|
    | `_mlir_memref_to_llvm_alloc` | `gradcomm_memref_alloc` |
    | `_mlir_memref_to_llvm_aligned_alloc` | `gradcomm_memref_aligned_alloc` |
    | `_mlir_memref_to_llvm_free` | `gradcomm_memref_free` |
    | `memrefCopy` | `gradcomm_memref_copy` |

    ```mlir
    llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
    %p = llvm.call @_mlir_memref_to_llvm_alloc(%n) : (i64) -> !llvm.ptr
    // becomes
    llvm.func @gradcomm_memref_alloc(i64) -> !llvm.ptr
    %p = llvm.call @gradcomm_memref_alloc(%n) : (i64) -> !llvm.ptr
    ```

    A module that already declares one of the new names beside the old one
    is an error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LowerBf16Pass : Pass<"gradcomm-lower-bf16"> {
  let summary = "Lower bf16 conversions and bf16 loads and stores to integer "
                "ops, so no bf16 value reaches LLVM";
  let description = [{
    bfloat16 is a storage type in compiled steps: values are widened to f32
    to compute and rounded back once per operation (docs/export.md, "Mixed
    precision"; `arith-emulate-unsupported-floats` does the same for
    arithmetic written directly on bf16). Runs after the memref-to-LLVM
    conversion, before arith-to-LLVM, and rewrites:

    - every scalar `arith.extf` from bf16 to f32: the 16 bits become the
      high half of the f32 (exact);
    - every scalar `arith.truncf` from f32 to bf16: round to nearest, ties
      to even, on the f32 bits (`(bits + 0x7fff + lsb) >> 16`); a NaN
      becomes the quiet NaN 0x7fc0, as PyTorch's `round_to_nearest_even`
      does;
    - every `llvm.load` of a bf16 and `llvm.store` of one: they move an
      `i16`, with an `arith.bitcast` beside them.

    So LLVM sees only integers where bf16 values are computed, loaded or
    stored, and the bitcasts fold away. Without that, LLVM's x86 backend
    keeps bf16 values in float registers: a select or a vector element of
    bf16 (which the loop vectorizer makes of the rounding's integer select)
    is rounded back with a call to libgcc's `__truncsfbf2`, which GCC 12
    (Debian 12) does not have. Upstream's `arith-expand{include-bf16}`
    computes the same values but leaves such selects. Other bf16
    conversions (from f64, with a rounding mode, on vectors) are left as
    they are.

    ```mlir
    %h = arith.truncf %x : f32 to bf16
    llvm.store %h, %p : bf16, !llvm.ptr
    // becomes
    %bits = arith.bitcast %x : f32 to i32
    %lsb = arith.andi (arith.shrui %bits, 16), 1
    %rounded = arith.shrui (arith.addi %bits, (arith.addi %lsb, 0x7fff)), 16
    %nan = arith.cmpf uno, %x, %x : f32
    %h = arith.bitcast (arith.select %nan, 0x7fc0, (arith.trunci %rounded))
    llvm.store (arith.bitcast %h : bf16 to i16), %p : i16, !llvm.ptr
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def InterchangeReductionsPass
    : Pass<"gradcomm-interchange-reductions", "::mlir::func::FuncOp"> {
  let summary = "Move reduction loops outside the output's fastest dimension";
  let description = [{
    A `linalg.generic` lowers to loops in the order of its iteration
    dimensions; a matmul written `(m, n, k)` then has its reduction
    innermost, with strided loads and a loop-carried sum that LLVM cannot
    vectorize without reordering floating-point additions. This pass
    permutes the dimensions so that the reductions run just outside the
    output's fastest-varying (last) dimension, when that dimension is
    parallel, at least 4 long (a 3x3 kernel's width is not worth a vector
    loop), and some input walks memory with unit step along it too, as
    `n` or a stride-1 convolution window `ow + kw` (a row reduction is left
    alone): `(m, n, k)` becomes `(m, k, n)`, and a convolution's
    `(n, f, oh, ow, c, kh, kw)` becomes `(n, f, oh, c, kh, kw, ow)`.
    When the output's last dimension is too short (a 3x3 convolution's
    weight gradient, `(f, c, kh, kw, n, oh, ow)`), the trailing output
    dimensions whose extents multiply to 4..16 go innermost instead, below
    reductions of at least 64 terms: `(f, c, n, oh, ow, kh, kw)` updates
    nine outputs side by side, independent chains of additions the CPU
    overlaps. Every output element still
    accumulates its terms in the same order, so results are bit-identical,
    and the innermost loop is a contiguous, vectorizable update.

    ```mlir
    linalg.generic {indexing_maps = [(m, n, k) -> (m, k), (m, n, k) -> (k, n),
                                     (m, n, k) -> (m, n)],
                    iterator_types = ["parallel", "parallel", "reduction"]}
    // becomes
    linalg.generic {indexing_maps = [(m, k, n) -> (m, k), (m, k, n) -> (k, n),
                                     (m, k, n) -> (m, n)],
                    iterator_types = ["parallel", "reduction", "parallel"]}
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def DropInPlaceResultsPass
    : Pass<"gradcomm-drop-in-place-results", "::mlir::ModuleOp"> {
  let summary = "Drop results of public functions that are an argument's "
                "buffer";
  let description = [{
    After bufferization, a result that is (a cast of) one of the function's
    own argument buffers was computed in place: the caller already holds it.
    This pass removes such results from public function definitions (the
    entry points trainers call; upstream `drop-equivalent-buffer-results`
    only handles private ones), so nothing is cloned to return them. A
    communication-only step that all-reduces its gradient arguments in place
    then returns nothing for them and never touches their contents on the
    host.

    ```mlir
    func.func @hook(%g: memref<256xf32>) -> memref<256xf32> {
      ... // all-reduce %g in place
      return %g : memref<256xf32>
    }
    // becomes
    func.func @hook(%g: memref<256xf32>) {
      ...
      return
    }
    ```
  }];
}

def ExportCInterfacePass
    : Pass<"gradcomm-export-c-interface", "::mlir::ModuleOp"> {
  let summary = "Give every public function a C interface "
                "(`llvm.emit_c_interface`)";
  let description = [{
    Marks each public `func.func` definition with `llvm.emit_c_interface`,
    so `convert-func-to-llvm` emits `_mlir_ciface_<name>`, which takes memref
    descriptors by pointer: the entry point a C or C++ trainer calls
    (`gradcomm-compile --emit-header` declares it).

    ```mlir
    func.func @step(%w: memref<4xf32>) -> memref<4xf32>
    // becomes
    func.func @step(%w: memref<4xf32>) -> memref<4xf32>
        attributes {llvm.emit_c_interface}
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // GRADCOMM_TRANSFORMS_PASSES
