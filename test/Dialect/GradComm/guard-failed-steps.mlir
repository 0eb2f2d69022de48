// RUN: gradcomm-opt %s --split-input-file --gradcomm-guard-failed-steps | FileCheck %s

// Writes after the first recorded runtime call run only while the step has
// not failed: one flat guard per run of writes, values (allocations) left
// outside, the runtime calls themselves never guarded.

#map = affine_map<(d0) -> (d0)>
func.func private @gradcomm_rt_dense_all_reduce_f32(!llvm.ptr, memref<*xf32>, i32) -> i32
func.func private @gradcomm_rt_record(i32)

// CHECK:       func.func private @gradcomm_rt_step_ok() -> i32
// CHECK-LABEL: func.func @step(
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[BEFORE:.*]] : memref<4xf32>)
// CHECK:         %[[S0:.*]] = call @gradcomm_rt_dense_all_reduce_f32
// CHECK-NEXT:    call @gradcomm_rt_record(%[[S0]])
// CHECK-NEXT:    %[[A:.*]] = memref.alloc()
// CHECK-NEXT:    %[[OK:.*]] = call @gradcomm_rt_step_ok() : () -> i32
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[GO:.*]] = arith.cmpi ne, %[[OK]], %[[C0]] : i32
// CHECK-NEXT:    scf.if %[[GO]] {
// CHECK-NEXT:      linalg.fill
// CHECK-NEXT:      linalg.generic
// CHECK:           memref.copy
// CHECK-NEXT:    } {gradcomm.step_guard}
// CHECK-NEXT:    memref.cast
// CHECK-NEXT:    %[[S1:.*]] = call @gradcomm_rt_dense_all_reduce_f32
// CHECK-NEXT:    call @gradcomm_rt_record(%[[S1]])
// CHECK:         %{{.*}} = call @gradcomm_rt_step_ok()
// CHECK:         scf.if
// CHECK-NEXT:      memref.store
// CHECK-NEXT:    } {gradcomm.step_guard}
// CHECK-NEXT:    return
func.func @step(%w: memref<4xf32>, %g: memref<4xf32>, %h: memref<4xf32>,
                %name: !llvm.ptr, %lr: f32) {
  linalg.fill ins(%lr : f32) outs(%h : memref<4xf32>)
  %cast = memref.cast %g : memref<4xf32> to memref<*xf32>
  %c1 = arith.constant 1 : i32
  %s0 = call @gradcomm_rt_dense_all_reduce_f32(%name, %cast, %c1)
      : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_record(%s0) : (i32) -> ()
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%lr : f32) outs(%a : memref<4xf32>)
  linalg.generic {indexing_maps = [#map, #map, #map],
                  iterator_types = ["parallel"]}
      ins(%g, %a : memref<4xf32>, memref<4xf32>) outs(%w : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  }
  memref.copy %w, %h : memref<4xf32> to memref<4xf32>
  %cast2 = memref.cast %h : memref<4xf32> to memref<*xf32>
  %s1 = call @gradcomm_rt_dense_all_reduce_f32(%name, %cast2, %c1)
      : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_record(%s1) : (i32) -> ()
  %i = arith.constant 0 : index
  memref.store %lr, %w[%i] : memref<4xf32>
  return
}

// -----

// A function that records nothing (compiled with on-error=abort, or no
// communication) is left as it is, and no declaration is added.
// CHECK-LABEL: func.func @no_runtime(
// CHECK-NOT:     scf.if
// CHECK-NOT:     gradcomm_rt_step_ok
func.func @no_runtime(%w: memref<4xf32>, %lr: f32) {
  linalg.fill ins(%lr : f32) outs(%w : memref<4xf32>)
  return
}

