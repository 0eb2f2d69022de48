// RUN: gradcomm-opt %s --split-input-file --gradcomm-free-after-last-use | FileCheck %s

// A temporary used by a loop nest and a runtime call is freed right after
// the call; the returned buffer is handed to the caller (out of the list
// and out of the retained values; its ownership result is its condition).
// CHECK-LABEL: func.func @temporary_and_result
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK:         %[[TMP:.*]] = memref.alloc()
// CHECK:         linalg.generic
// CHECK:         call @gradcomm_rt_dense_all_reduce_f32
// CHECK-NEXT:    memref.dealloc %[[TMP]]
// CHECK:         %[[OUT:.*]] = memref.alloc()
// CHECK:         linalg.generic
// CHECK-NOT:     bufferization.dealloc
// CHECK:         return %[[OUT]], %[[TRUE]]
func.func private @gradcomm_rt_dense_all_reduce_f32(!llvm.ptr, memref<*xf32>, i32) -> i32
func.func @temporary_and_result(%g: memref<4xf32>, %name: !llvm.ptr) -> (memref<4xf32>, i1) {
  %true = arith.constant true
  %c0 = arith.constant 0 : i32
  %tmp = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : memref<4xf32>) outs(%tmp : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %cast = memref.cast %tmp : memref<4xf32> to memref<*xf32>
  %s = call @gradcomm_rt_dense_all_reduce_f32(%name, %cast, %c0) : (!llvm.ptr, memref<*xf32>, i32) -> i32
  %out = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : memref<4xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %own = bufferization.dealloc (%tmp, %out : memref<4xf32>, memref<4xf32>) if (%true, %true) retain (%out : memref<4xf32>)
  return %out, %own : memref<4xf32>, i1
}

// -----

// A use nested in an operation of the block counts as that operation: the
// buffer is freed after the scf.if, not inside it.
// CHECK-LABEL: func.func @nested_use
// CHECK:         %[[TMP:.*]] = memref.alloc()
// CHECK:         scf.if
// CHECK:           memref.store
// CHECK:         }
// CHECK-NEXT:    memref.dealloc %[[TMP]]
// CHECK-NEXT:    return
func.func @nested_use(%c: i1, %x: f32) {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %tmp = memref.alloc() : memref<4xf32>
  scf.if %c {
    memref.store %x, %tmp[%c0] : memref<4xf32>
  }
  bufferization.dealloc (%tmp : memref<4xf32>) if (%true)
  return
}

// -----

// Kept in the list: a buffer passed to a call that may keep it, one freed
// only under a run-time condition, and one whose view is returned.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     memref.dealloc
// CHECK:         %[[R:.*]] = bufferization.dealloc (%[[A:.*]], %[[B:.*]], %[[C:.*]] : {{.*}}) if ({{.*}}) retain (%[[V:.*]] : memref<2xf32, strided<[1], offset: 2>>)
// CHECK-NOT:     memref.dealloc
func.func private @keeps(memref<4xf32>)
func.func @kept(%cond: i1) -> (memref<2xf32, strided<[1], offset: 2>>, i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  call @keeps(%a) : (memref<4xf32>) -> ()
  %b = memref.alloc() : memref<4xf32>
  %c = memref.alloc() : memref<4xf32>
  %v = memref.subview %c[2] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 2>>
  %own = bufferization.dealloc (%a, %b, %c : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%true, %cond, %true) retain (%v : memref<2xf32, strided<[1], offset: 2>>)
  return %v, %own : memref<2xf32, strided<[1], offset: 2>>, i1
}

// -----

// A retained value of unknown origin (an argument) may alias any entry:
// the op is left as it is.
// CHECK-LABEL: func.func @unknown_retained
// CHECK-NOT:     memref.dealloc
// CHECK:         bufferization.dealloc (%{{.*}} : memref<4xf32>) if (%{{.*}}) retain (%{{.*}} : memref<4xf32>)
func.func @unknown_retained(%arg: memref<4xf32>) -> (memref<4xf32>, i1) {
  %true = arith.constant true
  %tmp = memref.alloc() : memref<4xf32>
  %own = bufferization.dealloc (%tmp : memref<4xf32>) if (%true) retain (%arg : memref<4xf32>)
  return %arg, %own : memref<4xf32>, i1
}

// -----

// An entry listed twice is freed once.
// CHECK-LABEL: func.func @repeated
// CHECK:         memref.dealloc
// CHECK-NOT:     memref.dealloc
// CHECK:         return
func.func @repeated() {
  %true = arith.constant true
  %tmp = memref.alloc() : memref<4xf32>
  bufferization.dealloc (%tmp, %tmp : memref<4xf32>, memref<4xf32>) if (%true, %true)
  return
}
