// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gradcomm-opt %s --convert-gradcomm-to-runtime --cse -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=CSE

// The training recipe's attributes (docs/scalecom.md, "The recipe") select
// the runtime's recipe call, with the warm-up steps, the ramp's first
// ratio (0: a dense warm-up), the clipping threshold (0: none), the
// momentum correction (0: none), Nesterov and dense (0 or 1).

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x32xf32>

// CHECK-DAG:   func.func private @gradcomm_rt_scalecom_recipe_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i32, i64, f32, i64, f32, f32, f32, i32, i32, i32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @dense_warmup
// CHECK-DAG:   %[[K:.*]] = arith.constant 64 : i64
// CHECK-DAG:   %[[BETA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:   %[[WARMUP:.*]] = arith.constant 100 : i64
// CHECK-DAG:   %[[DENSE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:   %[[NOCLIP:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:       call @gradcomm_rt_scalecom_recipe_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[K]], %{{.*}}, %{{.*}}, %[[BETA]], %[[WARMUP]], %[[DENSE]], %[[NOCLIP]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:   gradcomm_rt_scalecom_f32(
func.func @dense_warmup(%g: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = exact {warmup_steps = 100 : i64}
      : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x32xf32>, tensor<64xi64>
  return %r : tensor<32x32xf32>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x32xf32>

// CHECK-LABEL: func.func @ramp_and_clip
// CHECK-DAG:   %[[WARMUP:.*]] = arith.constant 20 : i64
// CHECK-DAG:   %[[FROM:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-DAG:   %[[CLIP:.*]] = arith.constant 2.500000e-01 : f32
// CHECK:       call @gradcomm_rt_scalecom_recipe_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[WARMUP]], %[[FROM]], %[[CLIP]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
func.func @ramp_and_clip(%g: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = exact
      {warmup_steps = 20 : i64, warmup_ramp_from = 4.0 : f32, clip = 0.25 : f32}
      : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 1.0
      : tensor<32x32xf32>, tensor<64xi64>
  return %r : tensor<32x32xf32>
}

// -----

// Momentum correction: its factor, Nesterov and dense reach the call
// (constants merged by --cse: 1 : i32 is also the average reduction).

shard.grid @grid(shape = 4)
gradcomm.state @w_grad : tensor<32x32xf32>
gradcomm.state @b_grad : tensor<32xf32>

// CSE-LABEL: func.func @momentum
// CSE-DAG:   %[[MU:.*]] = arith.constant 0.899999976 : f32
// CSE-DAG:   %[[ON:.*]] = arith.constant 1 : i32
// CSE-DAG:   %[[OFF:.*]] = arith.constant 0 : i32
// CSE:       call @gradcomm_rt_scalecom_recipe_f32({{(%[^,]+, )+}}%[[MU]], %[[ON]], %[[OFF]], %[[ON]])
// CSE:       call @gradcomm_rt_scalecom_recipe_f32({{(%[^,]+, )+}}%[[MU]], %[[OFF]], %[[ON]], %[[ON]])
func.func @momentum(%g: tensor<32x32xf32>, %h: tensor<32xf32>)
    -> (tensor<32x32xf32>, tensor<32xf32>) {
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 64 selection = exact
      {warmup_steps = 100 : i64, momentum = 0.9 : f32, nesterov}
      : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = average
      : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 0.5
      : tensor<32x32xf32>, tensor<64xi64>
  %bv, %bi = gradcomm.cltk_compress %h state @b_grad on @grid grid_axes = [0]
      k = 32 selection = exact {momentum = 0.9 : f32, dense}
      : tensor<32xf32> -> tensor<32xf32>, tensor<32xi64>
  %br = gradcomm.sparse_all_reduce %bv, %bi on @grid grid_axes = [0]
      reduction = average
      : tensor<32xf32>, tensor<32xi64> -> tensor<32xf32>
  gradcomm.memory_update %h, %bi state @b_grad beta = 0.5
      : tensor<32xf32>, tensor<32xi64>
  return %r, %br : tensor<32x32xf32>, tensor<32xf32>
}

// -----

// The recipe changes what all three ops do: it has no op-by-op lowering.

shard.grid @grid(shape = 2)
gradcomm.state @w_grad : tensor<16xf32>

func.func @unfused(%g: tensor<16xf32>) -> (tensor<16xf32>, tensor<4xi64>) {
  // expected-error @+2 {{with the training recipe (warmup_steps, warmup_ramp_from, clip, momentum, dense) lowers only as the fused step}}
  // expected-error @+1 {{failed to legalize operation 'gradcomm.cltk_compress'}}
  %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
      k = 4 selection = exact {clip = 1.0 : f32}
      : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
      reduction = sum : tensor<4xf32>, tensor<4xi64> -> tensor<16xf32>
  gradcomm.memory_update %g, %i state @w_grad beta = 1.0
      : tensor<16xf32>, tensor<4xi64>
  return %r, %i : tensor<16xf32>, tensor<4xi64>
}
