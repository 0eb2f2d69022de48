// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime -split-input-file -verify-diagnostics | FileCheck %s

// Two states whose names sanitize to the same symbol ("a.b" and "a_b") keep
// two runtime strings, so the runtime keeps two error-feedback memories; a
// user symbol that happens to have a string global's name is left alone.

shard.grid @grid(shape = 2)
gradcomm.state @"a.b" : tensor<16xf32>
gradcomm.state @a_b : tensor<16xf32>
llvm.mlir.global internal constant @__gradcomm_str_a_b_1("user\00")

// CHECK-DAG: llvm.mlir.global internal constant @__gradcomm_str_a_b("a.b\00")
// CHECK-DAG: llvm.mlir.global internal constant @__gradcomm_str_a_b_1("user\00")
// CHECK-DAG: llvm.mlir.global internal constant @__gradcomm_str_a_b_2("a_b\00")
// CHECK-LABEL: func.func @two_states
// CHECK: %[[DOT:.*]] = llvm.mlir.addressof @__gradcomm_str_a_b :
// CHECK: call @gradcomm_rt_scalecom_f32(%[[DOT]],
// CHECK: %[[UNDERSCORE:.*]] = llvm.mlir.addressof @__gradcomm_str_a_b_2 :
// CHECK: call @gradcomm_rt_scalecom_f32(%[[UNDERSCORE]],
func.func @two_states(%g: tensor<16xf32>, %h: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %v, %i = gradcomm.cltk_compress %g state @"a.b" on @grid grid_axes = [0]
      k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average : tensor<4xf32>, tensor<4xi64> -> tensor<16xf32>
  gradcomm.memory_update %g, %i state @"a.b" beta = 1.0
      : tensor<16xf32>, tensor<4xi64>
  %v2, %i2 = gradcomm.cltk_compress %h state @a_b on @grid grid_axes = [0]
      k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  %r2 = gradcomm.sparse_all_reduce %v2, %i2 on @grid grid_axes = [0]
      reduction = average : tensor<4xf32>, tensor<4xi64> -> tensor<16xf32>
  gradcomm.memory_update %h, %i2 state @a_b beta = 1.0
      : tensor<16xf32>, tensor<4xi64>
  return %r, %r2 : tensor<16xf32>, tensor<16xf32>
}

// -----

// The stamped runtime name is what the runtime is told; without one (IR
// that skipped gradcomm-name-collectives) the name is positional.

shard.grid @grid(shape = 2)

// CHECK-DAG: llvm.mlir.global internal constant @__gradcomm_str_fc1_weight_grad("fc1.weight_grad\00")
// CHECK-DAG: llvm.mlir.global internal constant @__gradcomm_str_stamped_all_reduce_1("stamped_all_reduce_1\00")
// CHECK-LABEL: func.func @stamped
func.func @stamped(%g: tensor<16xf32>, %h: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = sum {gradcomm.runtime_name = "fc1.weight_grad"}
      : tensor<16xf32> -> tensor<16xf32>
  %s = shard.all_reduce %h on @grid grid_axes = [0] reduction = sum
      : tensor<16xf32> -> tensor<16xf32>
  return %r, %s : tensor<16xf32>, tensor<16xf32>
}

// -----

// A module symbol with a runtime function's name and another meaning is an
// error, not a call to the wrong function.

shard.grid @grid(shape = 2)
// expected-error @+1 {{'gradcomm_rt_check' is a GradComm runtime function of type '(i32) -> ()'; the module defines it otherwise}}
func.func private @gradcomm_rt_check(i64)

func.func @clash(%g: tensor<16xf32>) -> tensor<16xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = sum
      : tensor<16xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}
