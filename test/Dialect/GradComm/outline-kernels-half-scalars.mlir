// RUN: gradcomm-opt %s --gradcomm-outline-kernels | FileCheck %s

// A bf16 or f16 scalar a kernel reads (here a learning rate) crosses the
// call as its bits: LLVM's x86 backend would round a bf16 argument with a
// call to __truncsfbf2, which GCC 12's libgcc lacks.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func private @step__kernel_0(
// CHECK-SAME:  %{{.*}}: memref<16xbf16>, %[[LR:.*]]: i16, %[[SCALE:.*]]: i16)
// CHECK-DAG:   arith.bitcast %[[LR]] : i16 to bf16
// CHECK-DAG:   arith.bitcast %[[SCALE]] : i16 to f16
// CHECK:       linalg.generic
// CHECK-LABEL: func.func @step(
// CHECK-SAME:  %[[W:.*]]: memref<16xbf16>, %[[A:.*]]: bf16, %[[B:.*]]: f16)
// CHECK-DAG:   %[[ABITS:.*]] = arith.bitcast %[[A]] : bf16 to i16
// CHECK-DAG:   %[[BBITS:.*]] = arith.bitcast %[[B]] : f16 to i16
// CHECK:       call @step__kernel_0(%[[W]], %[[ABITS]], %[[BBITS]])
// CHECK-SAME:  : (memref<16xbf16>, i16, i16) -> ()
func.func @step(%w: memref<16xbf16>, %lr: bf16, %scale: f16) {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%w : memref<16xbf16>) {
  ^bb0(%y: bf16):
    %wide = arith.extf %y : bf16 to f32
    %lr32 = arith.extf %lr : bf16 to f32
    %s32 = arith.extf %scale : f16 to f32
    %m = arith.mulf %lr32, %s32 : f32
    %r = arith.subf %wide, %m : f32
    %n = arith.truncf %r : f32 to bf16
    linalg.yield %n : bf16
  }
  return
}
