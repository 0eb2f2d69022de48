// RUN: gradcomm-opt %s --gradcomm-scalecom --gradcomm-to-llvm-pipeline | FileCheck %s

// A communication-only step compiles to host code that never reads or
// writes tensor contents and never allocates host memory: the dense bias
// all-reduce works in place in the argument (its result is dropped), the
// ScaleCom output is allocated through the runtime
// (gradcomm_memref_alloc: device memory on the CUDA backend). ScaleCom
// runs with the recipe's default warm-up (gradcomm_rt_scalecom_recipe_f32).

shard.grid @grid(shape = 4)

// Each runtime call (with its status check) is outlined by
// gradcomm-outline-kernels into an internal, never-inlined function taking
// bare pointers.
// CHECK-NOT:   llvm.call @malloc
// CHECK-NOT:   llvm.intr.memcpy
// CHECK-NOT:   llvm.load {{.*}} -> f32
// CHECK-NOT:   llvm.store {{.*}} : f32
// CHECK-LABEL: llvm.func internal @hook__comm_0(
// CHECK-SAME:  %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {llvm.bareptr, no_inline}
// CHECK:       llvm.call @gradcomm_rt_scalecom_recipe_f32
// CHECK:       llvm.call @gradcomm_rt_check
// CHECK-LABEL: llvm.func internal @hook__comm_1(
// CHECK:       llvm.call @gradcomm_rt_dense_all_reduce_f32
// CHECK-LABEL: llvm.func @hook(
// CHECK-SAME:  -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK:       llvm.call @gradcomm_memref_alloc
// CHECK:       llvm.call @hook__comm_0
// CHECK:       llvm.call @hook__comm_1
// CHECK-NOT:   llvm.call @gradcomm_memref_free
// CHECK:       llvm.return
func.func @hook(%gw: tensor<1024x256xf32>, %gb: tensor<256xf32>)
    -> (tensor<1024x256xf32>, tensor<256xf32>) {
  %rw = shard.all_reduce %gw on @grid grid_axes = [0] reduction = average
      {gradcomm.policy = "scalecom"} : tensor<1024x256xf32> -> tensor<1024x256xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<256xf32> -> tensor<256xf32>
  return %rw, %rb : tensor<1024x256xf32>, tensor<256xf32>
}
