// RUN: gradcomm-opt %s --gradcomm-outline-kernels | FileCheck %s
// RUN: gradcomm-opt %s --gradcomm-outline-kernels="min-ops=3" | FileCheck %s --check-prefix=MIN

// Each loop nest and each runtime call (with its status check) of a step
// moves into its own private, never-inlined function; constants and casts
// are recreated inside, so statically shaped buffers pass as bare pointers.

#id = affine_map<(i) -> (i)>
func.func private @gradcomm_rt_dense_all_reduce_f32(!llvm.ptr, memref<*xf32>, i32) -> i32 attributes {llvm.emit_c_interface}
func.func private @gradcomm_rt_check(i32)
llvm.mlir.global internal constant @__gradcomm_str_w_grad("w_grad\00")

// CHECK-LABEL: func.func private @step__comm_0(
// CHECK-SAME:  %[[G:.*]]: memref<64xf32>) attributes {gradcomm.kernel, llvm.bareptr, no_inline}
// CHECK:       %[[NAME:.*]] = llvm.mlir.addressof @__gradcomm_str_w_grad
// CHECK:       %[[CAST:.*]] = memref.cast %[[G]] : memref<64xf32> to memref<*xf32>
// CHECK:       %[[S:.*]] = call @gradcomm_rt_dense_all_reduce_f32(%[[NAME]], %[[CAST]], %{{.*}})
// CHECK:       call @gradcomm_rt_check(%[[S]])
// CHECK-LABEL: func.func private @step__kernel_1(
// CHECK-SAME:  %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: f32) attributes {gradcomm.kernel, llvm.bareptr, no_inline}
// CHECK:       arith.constant 2.0
// CHECK:       linalg.generic
// CHECK-LABEL: func.func @step(
// CHECK-NEXT:  call @step__comm_0(%arg1)
// CHECK-NEXT:  call @step__kernel_1(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT:  return

// Fewer structured ops than min-ops: nothing moves.
// MIN-LABEL: func.func @step(
// MIN:       call @gradcomm_rt_dense_all_reduce_f32
// MIN:       linalg.generic
func.func @step(%w: memref<64xf32>, %g: memref<64xf32>, %out: memref<64xf32>, %lr: f32) {
  %two = arith.constant 2.0 : f32
  %name = llvm.mlir.addressof @__gradcomm_str_w_grad : !llvm.ptr
  %avg = arith.constant 1 : i32
  %cast = memref.cast %g : memref<64xf32> to memref<*xf32>
  %s = call @gradcomm_rt_dense_all_reduce_f32(%name, %cast, %avg) : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_check(%s) : (i32) -> ()
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%w, %g : memref<64xf32>, memref<64xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %b, %lr : f32
    %t = arith.mulf %m, %two : f32
    %r = arith.subf %a, %t : f32
    linalg.yield %r : f32
  }
  return
}
