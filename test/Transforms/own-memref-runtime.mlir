// RUN: gradcomm-opt %s --split-input-file --verify-diagnostics --gradcomm-own-memref-runtime | FileCheck %s

// Lowered code's allocation, free and strided copy call the runtime's own
// symbols, never c_runner_utils' names, which another library in the
// process could provide: declarations and calls are renamed together.

// CHECK-LABEL: llvm.func @gradcomm_memref_alloc(i64) -> !llvm.ptr
// CHECK:       llvm.func @gradcomm_memref_aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK:       llvm.func @gradcomm_memref_free(!llvm.ptr)
// CHECK:       llvm.func @gradcomm_memref_copy(i64, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: llvm.func @step(
// CHECK:         llvm.call @gradcomm_memref_alloc(
// CHECK:         llvm.call @gradcomm_memref_aligned_alloc(
// CHECK:         llvm.call @gradcomm_memref_copy(
// CHECK:         llvm.call @gradcomm_memref_free(
// CHECK-NOT:   _mlir_memref_to_llvm
// CHECK-NOT:   memrefCopy
llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
llvm.func @_mlir_memref_to_llvm_aligned_alloc(i64, i64) -> !llvm.ptr
llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
llvm.func @memrefCopy(i64, !llvm.ptr, !llvm.ptr)
llvm.func @step(%n: i64, %d: !llvm.ptr) {
  %a = llvm.call @_mlir_memref_to_llvm_alloc(%n) : (i64) -> !llvm.ptr
  %b = llvm.call @_mlir_memref_to_llvm_aligned_alloc(%n, %n) : (i64, i64) -> !llvm.ptr
  llvm.call @memrefCopy(%n, %d, %d) : (i64, !llvm.ptr, !llvm.ptr) -> ()
  llvm.call @_mlir_memref_to_llvm_free(%a) : (!llvm.ptr) -> ()
  llvm.call @_mlir_memref_to_llvm_free(%b) : (!llvm.ptr) -> ()
  llvm.return
}

// -----

// Both names declared: which one a call means would be ambiguous.
// expected-error @+1 {{gradcomm-own-memref-runtime: the module already declares @gradcomm_memref_free beside @_mlir_memref_to_llvm_free}}
llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
llvm.func @gradcomm_memref_free(!llvm.ptr)
