// RUN: gradcomm-opt %s --gradcomm-finalize-kernels | FileCheck %s

// Outlined kernels get internal linkage (two steps in one program never
// clash) and no_inline (LLVM keeps them out of line); other functions are
// left alone.

// CHECK:     llvm.func internal @step__kernel_0(%{{.*}}: !llvm.ptr) attributes {no_inline}
// CHECK-NOT: gradcomm.kernel
// CHECK:     llvm.func @step(
// CHECK-NOT: no_inline
llvm.func @step__kernel_0(%a: !llvm.ptr) attributes {gradcomm.kernel, sym_visibility = "private"} {
  llvm.return
}
llvm.func @step(%p: !llvm.ptr) {
  llvm.call @step__kernel_0(%p) : (!llvm.ptr) -> ()
  llvm.return
}
