// RUN: gradcomm-opt %s --gradcomm-outline-kernels | FileCheck %s
// RUN: gradcomm-opt %s --gradcomm-outline-kernels="min-ops=3" | FileCheck %s --check-prefix=MIN

// Each loop nest and each runtime call (with its status check) of a step
// moves into its own private, never-inlined function; constants and casts
// are recreated inside, so statically shaped buffers pass as bare pointers.
// Names (symbol addresses) are passed in, so that identical calls and loop
// nests on tensors of one shape merge into one function.

#id = affine_map<(i) -> (i)>
func.func private @gradcomm_rt_dense_all_reduce_f32(!llvm.ptr, memref<*xf32>, i32) -> i32 attributes {llvm.emit_c_interface}
func.func private @gradcomm_rt_check(i32)
llvm.mlir.global internal constant @__gradcomm_str_w_grad("w_grad\00")

// CHECK-LABEL: func.func private @step__comm_0(
// CHECK-SAME:  %[[NAME:.*]]: !llvm.ptr, %[[G:.*]]: memref<64xf32>) attributes {gradcomm.kernel, llvm.bareptr, no_inline}
// CHECK:       %[[CAST:.*]] = memref.cast %[[G]] : memref<64xf32> to memref<*xf32>
// CHECK:       %[[S:.*]] = call @gradcomm_rt_dense_all_reduce_f32(%[[NAME]], %[[CAST]], %{{.*}})
// CHECK:       call @gradcomm_rt_check(%[[S]])
// CHECK-LABEL: func.func private @step__kernel_1(
// CHECK-SAME:  %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: f32) attributes {gradcomm.kernel, llvm.bareptr, no_inline}
// CHECK:       arith.constant 2.0
// CHECK:       linalg.generic
// CHECK-LABEL: func.func @step(
// CHECK-NEXT:  %[[N:.*]] = llvm.mlir.addressof @__gradcomm_str_w_grad
// CHECK-NEXT:  call @step__comm_0(%[[N]], %arg1)
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

llvm.mlir.global internal constant @__gradcomm_str_b_grad("b_grad\00")

// Two parameters of one shape: their all-reduces call one function (only
// the name differs, and it is an argument), here the one @step already
// has, and their updates one kernel; an update of another shape keeps its
// own kernel.
// CHECK-NOT:   func.func private @two__comm_
// CHECK-LABEL: func.func private @two__kernel_1(
// CHECK-NOT:   func.func private @two__kernel_3
// CHECK-LABEL: func.func private @two__kernel_4(
// CHECK-SAME:  memref<8xf32>
// CHECK-LABEL: func.func @two(
// CHECK:       call @step__comm_0(%{{.*}}, %arg1)
// CHECK:       call @two__kernel_1(%arg1, %arg0)
// CHECK:       call @step__comm_0(%{{.*}}, %arg3)
// CHECK:       call @two__kernel_1(%arg3, %arg2)
// CHECK:       call @two__kernel_4(%arg4)
func.func @two(%w: memref<64xf32>, %g: memref<64xf32>,
               %b: memref<64xf32>, %h: memref<64xf32>, %c: memref<8xf32>) {
  %avg = arith.constant 1 : i32
  %wname = llvm.mlir.addressof @__gradcomm_str_w_grad : !llvm.ptr
  %gcast = memref.cast %g : memref<64xf32> to memref<*xf32>
  %s0 = call @gradcomm_rt_dense_all_reduce_f32(%wname, %gcast, %avg) : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_check(%s0) : (i32) -> ()
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%g : memref<64xf32>) outs(%w : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.subf %y, %x : f32
    linalg.yield %r : f32
  }
  %bname = llvm.mlir.addressof @__gradcomm_str_b_grad : !llvm.ptr
  %hcast = memref.cast %h : memref<64xf32> to memref<*xf32>
  %s1 = call @gradcomm_rt_dense_all_reduce_f32(%bname, %hcast, %avg) : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_check(%s1) : (i32) -> ()
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%h : memref<64xf32>) outs(%b : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.subf %y, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%c : memref<8xf32>) {
  ^bb0(%y: f32):
    %r = arith.addf %y, %y : f32
    linalg.yield %r : f32
  }
  return
}
