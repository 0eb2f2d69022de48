// RUN: gradcomm-opt %s --gradcomm-lower-bf16 --canonicalize | FileCheck %s
// Values: folded, the integer sequence gives what PyTorch rounds to
// (nearest even, NaN to 0x7fc0), and the bf16 -> f32 widening is exact.

// f32 -> bf16: round to nearest even on the bits; NaN to the quiet NaN; no
// select on bf16 values (LLVM would legalize it through __truncsfbf2).
// CHECK-LABEL: func.func @narrow
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[BIAS:.*]] = arith.constant 32767 : i32
// CHECK-DAG: %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK: %[[BITS:.*]] = arith.bitcast %[[X]] : f32 to i32
// CHECK: %[[HIGH:.*]] = arith.shrui %[[BITS]], %[[C16]] : i32
// CHECK: %[[LSB:.*]] = arith.andi %[[HIGH]], %[[ONE]] : i32
// CHECK: %[[ADD:.*]] = arith.addi %[[LSB]], %[[BIAS]] : i32
// CHECK: %[[SUM:.*]] = arith.addi %[[BITS]], %[[ADD]] : i32
// CHECK: %[[TOP:.*]] = arith.shrui %[[SUM]], %[[C16]] : i32
// CHECK: %[[R16:.*]] = arith.trunci %[[TOP]] : i32 to i16
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: %[[SEL:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[R16]] : i16
// CHECK: %[[H:.*]] = arith.bitcast %[[SEL]] : i16 to bf16
// CHECK-NOT: arith.truncf
// CHECK: return %[[H]] : bf16
func.func @narrow(%x: f32) -> bf16 {
  %h = arith.truncf %x : f32 to bf16
  return %h : bf16
}

// bf16 -> f32: the bits become the high half.
// CHECK-LABEL: func.func @widen
// CHECK: %[[B:.*]] = arith.bitcast %{{.*}} : bf16 to i16
// CHECK: %[[W:.*]] = arith.extui %[[B]] : i16 to i32
// CHECK: %[[S:.*]] = arith.shli %[[W]], %{{.*}} : i32
// CHECK: %[[F:.*]] = arith.bitcast %[[S]] : i32 to f32
// CHECK-NOT: arith.extf
// CHECK: return %[[F]] : f32
func.func @widen(%h: bf16) -> f32 {
  %x = arith.extf %h : bf16 to f32
  return %x : f32
}

// Constants fold to the rounded values: 1 + 2^-8 is a tie between 1.0
// (0x3f80, even) and 1 + 2^-7 (0x3f81), so it rounds to 1.0; 1 + 3 * 2^-9
// rounds up to 0x3f81 (1.0078125); a NaN with payload becomes 0x7fc0;
// -2.5 widened is exact.
// CHECK-LABEL: func.func @constants
// CHECK-DAG: arith.constant 1.000000e+00 : bf16
// CHECK-DAG: arith.constant 1.007810e+00 : bf16
// CHECK-DAG: arith.constant 0x7FC0 : bf16
// CHECK-DAG: arith.constant -2.500000e+00 : f32
func.func @constants() -> (bf16, bf16, bf16, f32) {
  %tie = arith.constant 1.00390625 : f32
  %up = arith.constant 1.005859375 : f32
  %nan = arith.constant 0x7FC00001 : f32
  %a = arith.truncf %tie : f32 to bf16
  %b = arith.truncf %up : f32 to bf16
  %c = arith.truncf %nan : f32 to bf16
  %h = arith.constant -2.5 : bf16
  %w = arith.extf %h : bf16 to f32
  return %a, %b, %c, %w : bf16, bf16, bf16, f32
}

// Left alone: a conversion from f64, one with a rounding mode, f16.
// CHECK-LABEL: func.func @others
// CHECK: arith.truncf %{{.*}} : f64 to bf16
// CHECK: arith.truncf %{{.*}} to_nearest_away : f32 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @others(%d: f64, %x: f32) -> (bf16, bf16, f16) {
  %a = arith.truncf %d : f64 to bf16
  %b = arith.truncf %x to_nearest_away : f32 to bf16
  %c = arith.truncf %x : f32 to f16
  return %a, %b, %c : bf16, bf16, f16
}

// bf16 loads and stores move i16: LLVM never holds a bf16 value (its x86
// backend would round one kept in a float register with __truncsfbf2).
// CHECK-LABEL: func.func @accesses
// CHECK: %[[BITS:.*]] = llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> i16
// CHECK: arith.extui %[[BITS]] : i16 to i32
// CHECK: %[[OUT:.*]] = arith.select %{{.*}} : i16
// CHECK: llvm.store %[[OUT]], %{{.*}} {alignment = 2 : i64} : i16, !llvm.ptr
// CHECK-NOT: bf16
// CHECK: return
func.func @accesses(%p: !llvm.ptr, %q: !llvm.ptr) {
  %h = llvm.load %p {alignment = 2 : i64} : !llvm.ptr -> bf16
  %x = arith.extf %h : bf16 to f32
  %y = arith.addf %x, %x : f32
  %r = arith.truncf %y : f32 to bf16
  llvm.store %r, %q {alignment = 2 : i64} : bf16, !llvm.ptr
  return
}
