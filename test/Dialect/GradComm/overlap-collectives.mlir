// RUN: gradcomm-opt %s --gradcomm-overlap-collectives -split-input-file -verify-diagnostics | FileCheck %s

// A dense all-reduce starts where it was and is waited for just before the
// first operation that touches its buffer (here a view of it); the work on
// other allocations runs in between. The statuses keep their handler.

llvm.mlir.global internal constant @name("g\00")
func.func private @gradcomm_rt_dense_all_reduce_f32(!llvm.ptr, memref<*xf32>, i32) -> i32 attributes {llvm.emit_c_interface}
func.func private @gradcomm_rt_check(i32)

// CHECK-DAG:   func.func private @gradcomm_rt_dense_all_reduce_start_f32(!llvm.ptr, memref<*xf32>, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG:   func.func private @gradcomm_rt_wait_f32(!llvm.ptr, memref<*xf32>) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @dense(
// CHECK-SAME:    %[[X:[^:]*]]: memref<8xf32>
// CHECK:         %[[BUF:.*]] = memref.alloc() : memref<8xf32>
// CHECK:         %[[NAME:.*]] = llvm.mlir.addressof @name
// CHECK:         %[[CAST:.*]] = memref.cast %[[BUF]]
// CHECK:         %[[S:.*]] = call @gradcomm_rt_dense_all_reduce_start_f32(%[[NAME]], %[[CAST]], %{{.*}})
// CHECK-NEXT:    call @gradcomm_rt_check(%[[S]])
// CHECK-NEXT:    %[[OTHER:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    memref.copy %[[X]], %[[OTHER]]
// CHECK-NEXT:    memref.store %{{.*}}, %[[OTHER]]
// CHECK-NEXT:    %[[W:.*]] = call @gradcomm_rt_wait_f32(%[[NAME]], %[[CAST]])
// CHECK-NEXT:    call @gradcomm_rt_check(%[[W]])
// CHECK-NEXT:    memref.subview %[[BUF]]
func.func @dense(%x: memref<8xf32>, %g: memref<8xf32>) -> f32 {
  %buf = memref.alloc() : memref<8xf32>
  memref.copy %g, %buf : memref<8xf32> to memref<8xf32>
  %n = llvm.mlir.addressof @name : !llvm.ptr
  %c = memref.cast %buf : memref<8xf32> to memref<*xf32>
  %sum = arith.constant 0 : i32
  %i = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %s = call @gradcomm_rt_dense_all_reduce_f32(%n, %c, %sum) : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_check(%s) : (i32) -> ()
  %other = memref.alloc() : memref<8xf32>
  memref.copy %x, %other : memref<8xf32> to memref<8xf32>
  memref.store %one, %other[%i] : memref<8xf32>
  %view = memref.subview %buf[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %v = memref.load %view[%i] : memref<4xf32, strided<[1]>>
  return %v : f32
}

// -----

// A buffer that is an argument may alias every other argument: the wait
// stays before the first use of one. A call of another function ends the
// search too.

llvm.mlir.global internal constant @name("g\00")
func.func private @gradcomm_rt_dense_all_reduce_f32(!llvm.ptr, memref<*xf32>, i32) -> i32 attributes {llvm.emit_c_interface}
func.func private @gradcomm_rt_record(i32)
func.func private @opaque()

// CHECK-LABEL: func.func @argument(
// CHECK:         call @gradcomm_rt_dense_all_reduce_start_f32
// CHECK-NEXT:    call @gradcomm_rt_record
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    %[[W:.*]] = call @gradcomm_rt_wait_f32
// CHECK-NEXT:    call @gradcomm_rt_record(%[[W]])
// CHECK-NEXT:    memref.load
// CHECK-LABEL: func.func @opaque_call(
// CHECK:         call @gradcomm_rt_dense_all_reduce_start_f32
// CHECK-NEXT:    call @gradcomm_rt_record
// CHECK-NEXT:    memref.alloc
// CHECK-NEXT:    call @gradcomm_rt_wait_f32
// CHECK-NEXT:    call @gradcomm_rt_record
// CHECK-NEXT:    call @opaque()
func.func @argument(%g: memref<8xf32>, %x: memref<8xf32>) -> f32 {
  %n = llvm.mlir.addressof @name : !llvm.ptr
  %c = memref.cast %g : memref<8xf32> to memref<*xf32>
  %sum = arith.constant 0 : i32
  %s = call @gradcomm_rt_dense_all_reduce_f32(%n, %c, %sum) : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_record(%s) : (i32) -> ()
  %i = arith.constant 1 : index
  %v = memref.load %x[%i] : memref<8xf32>
  return %v : f32
}
func.func @opaque_call(%g: memref<8xf32>) {
  %n = llvm.mlir.addressof @name : !llvm.ptr
  %c = memref.cast %g : memref<8xf32> to memref<*xf32>
  %sum = arith.constant 0 : i32
  %s = call @gradcomm_rt_dense_all_reduce_f32(%n, %c, %sum) : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_record(%s) : (i32) -> ()
  %a = memref.alloc() : memref<8xf32>
  call @opaque() : () -> ()
  return
}

// -----

// Fused ScaleCom: the buffer to wait for is the output; the gradient is the
// runtime's no longer once the step is started, so writing it does not
// stop the search. Two steps are in flight together, waited for in the
// order their outputs are used.

llvm.mlir.global internal constant @a("a\00")
llvm.mlir.global internal constant @b("b\00")
func.func private @gradcomm_rt_scalecom_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i32, i64, f32, i32) -> i32 attributes {llvm.emit_c_interface}
func.func private @gradcomm_rt_check(i32)

// CHECK-LABEL: func.func @scalecom(
// CHECK:         call @gradcomm_rt_scalecom_start_f32(%[[A:[^,]*]], %{{[^,]*}}, %[[OUTA:[^,]*]],
// CHECK-NEXT:    call @gradcomm_rt_check
// CHECK:         call @gradcomm_rt_scalecom_start_f32(%[[B:[^,]*]], %{{[^,]*}}, %[[OUTB:[^,]*]],
// CHECK-NEXT:    call @gradcomm_rt_check
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    call @gradcomm_rt_wait_f32(%[[B]], %[[OUTB]])
// CHECK-NEXT:    call @gradcomm_rt_check
// CHECK-NEXT:    memref.load %{{.*}}[
// CHECK-NEXT:    call @gradcomm_rt_wait_f32(%[[A]], %[[OUTA]])
// CHECK-NEXT:    call @gradcomm_rt_check
// CHECK-NEXT:    memref.load
func.func @scalecom(%ga: memref<8xf32>, %gb: memref<8xf32>) -> (f32, f32) {
  %na = llvm.mlir.addressof @a : !llvm.ptr
  %nb = llvm.mlir.addressof @b : !llvm.ptr
  %oa = memref.alloc() : memref<8xf32>
  %ob = memref.alloc() : memref<8xf32>
  %cga = memref.cast %ga : memref<8xf32> to memref<*xf32>
  %cgb = memref.cast %gb : memref<8xf32> to memref<*xf32>
  %coa = memref.cast %oa : memref<8xf32> to memref<*xf32>
  %cob = memref.cast %ob : memref<8xf32> to memref<*xf32>
  %k = arith.constant 2 : i64
  %zero = arith.constant 0 : i32
  %chunk = arith.constant 0 : i64
  %beta = arith.constant 1.0 : f32
  %i = arith.constant 1 : index
  %sa = call @gradcomm_rt_scalecom_f32(%na, %cga, %coa, %k, %zero, %chunk, %beta, %zero) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i32, i64, f32, i32) -> i32
  call @gradcomm_rt_check(%sa) : (i32) -> ()
  %sb = call @gradcomm_rt_scalecom_f32(%nb, %cgb, %cob, %k, %zero, %chunk, %beta, %zero) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i32, i64, f32, i32) -> i32
  call @gradcomm_rt_check(%sb) : (i32) -> ()
  memref.store %beta, %ga[%i] : memref<8xf32>
  %vb = memref.load %ob[%i] : memref<8xf32>
  %va = memref.load %oa[%i] : memref<8xf32>
  return %va, %vb : f32, f32
}

// -----

// The replica exchanges write their replica x (operand 1): a gossip
// exchange and a synchronous elastic average both start where they stand,
// and each waits just before its replica is next read (the replicas are
// this function's own allocations, so they are known apart).

llvm.mlir.global internal constant @gx("gx\00")
llvm.mlir.global internal constant @ex("ex\00")
func.func private @gradcomm_rt_gossip_exchange_f32(!llvm.ptr, memref<*xf32>, i32, f32, i64, i64) -> i32 attributes {llvm.emit_c_interface}
func.func private @gradcomm_rt_elastic_average_f32(!llvm.ptr, memref<*xf32>, f32, i64) -> i32 attributes {llvm.emit_c_interface}
func.func private @gradcomm_rt_check(i32)

// CHECK-LABEL: func.func @replicas(
// CHECK:         call @gradcomm_rt_gossip_exchange_start_f32(%[[G:[^,]*]], %[[GX:[^,]*]],
// CHECK-NEXT:    call @gradcomm_rt_check
// CHECK-NEXT:    call @gradcomm_rt_elastic_average_start_f32(%[[E:[^,]*]], %[[EX:[^,]*]],
// CHECK-NEXT:    call @gradcomm_rt_check
// CHECK-NEXT:    call @gradcomm_rt_wait_f32(%[[E]], %[[EX]])
// CHECK-NEXT:    call @gradcomm_rt_check
// CHECK-NEXT:    memref.load %[[Y:.*]][
// CHECK-NEXT:    call @gradcomm_rt_wait_f32(%[[G]], %[[GX]])
// CHECK-NEXT:    call @gradcomm_rt_check
// CHECK-NEXT:    memref.load
func.func @replicas() -> (f32, f32) {
  %x = memref.alloc() : memref<8xf32>
  %y = memref.alloc() : memref<8xf32>
  %ng = llvm.mlir.addressof @gx : !llvm.ptr
  %ne = llvm.mlir.addressof @ex : !llvm.ptr
  %cx = memref.cast %x : memref<8xf32> to memref<*xf32>
  %cy = memref.cast %y : memref<8xf32> to memref<*xf32>
  %matching = arith.constant 0 : i32
  %half = arith.constant 0.5 : f32
  %seed = arith.constant 7 : i64
  %period = arith.constant 1 : i64
  %i = arith.constant 1 : index
  %sg = call @gradcomm_rt_gossip_exchange_f32(%ng, %cx, %matching, %half, %seed, %period) : (!llvm.ptr, memref<*xf32>, i32, f32, i64, i64) -> i32
  call @gradcomm_rt_check(%sg) : (i32) -> ()
  %se = call @gradcomm_rt_elastic_average_f32(%ne, %cy, %half, %period) : (!llvm.ptr, memref<*xf32>, f32, i64) -> i32
  call @gradcomm_rt_check(%se) : (i32) -> ()
  %vy = memref.load %y[%i] : memref<8xf32>
  %vx = memref.load %x[%i] : memref<8xf32>
  return %vx, %vy : f32, f32
}

// -----

llvm.mlir.global internal constant @name("g\00")
func.func private @gradcomm_rt_dense_all_reduce_f32(!llvm.ptr, memref<*xf32>, i32) -> i32 attributes {llvm.emit_c_interface}
func.func private @gradcomm_rt_check(i32)
// expected-error @+1 {{'gradcomm_rt_wait_f32' is a GradComm runtime function of type '(!llvm.ptr, memref<*xf32>) -> i32'; the module defines it otherwise}}
func.func private @gradcomm_rt_wait_f32(i32)

func.func @clash(%g: memref<8xf32>) {
  %n = llvm.mlir.addressof @name : !llvm.ptr
  %c = memref.cast %g : memref<8xf32> to memref<*xf32>
  %sum = arith.constant 0 : i32
  %s = call @gradcomm_rt_dense_all_reduce_f32(%n, %c, %sum) : (!llvm.ptr, memref<*xf32>, i32) -> i32
  call @gradcomm_rt_check(%s) : (i32) -> ()
  return
}
