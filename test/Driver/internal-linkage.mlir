// A compiled step's inner function is reached only through its C interface:
// internal linkage, so a function named `step` cannot bind to glibc's legacy
// `step` when the step is a shared library (Integration/shared-step.sh runs
// one).

// RUN: gradcomm-compile %s -o - --emit=llvm --strategy=dense | FileCheck %s
// CHECK-DAG: define internal {{.*}}@step(
// CHECK-DAG: define void @_mlir_ciface_step(
// CHECK-DAG: declare {{.*}}@_mlir_ciface_gradcomm_rt_dense_all_reduce_f32(

shard.grid @grid(shape = 2)
func.func @step(%w: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %u = arith.subf %w, %r : tensor<8xf32>
  return %u : tensor<8xf32>
}
