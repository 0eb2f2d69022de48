// RUN: gradcomm-opt %s --gradcomm-scalecom-pipeline | FileCheck %s
// RUN: gradcomm-opt %s --gradcomm-scalecom-pipeline="ratio=8 beta=0.5 report=true" 2>&1 | FileCheck %s --check-prefix=OPTS
// RUN: gradcomm-opt %s --gradcomm-scalecom-pipeline="warmup-steps=7 warmup=ramp warmup-start-ratio=2 clip=3" | FileCheck %s --check-prefix=RECIPE
// RECIPE: gradcomm.cltk_compress {{.*}} {clip = 3.000000e+00 : f32, warmup_ramp_from = 2.000000e+00 : f32, warmup_steps = 7 : i64}

// A single-device linear-regression step whose batch inputs carry
// shard.shard annotations. The pipeline partitions it (upstream
// sharding-propagation + shard-partition) and compresses the weight
// gradient; options are forwarded to gradcomm-scalecom.

// CHECK:       gradcomm.state @step_arg0_grad : tensor<64x32xf32>
// CHECK-LABEL: func.func @step
// CHECK-SAME:  tensor<4x64xf32>
// CHECK:       gradcomm.cltk_compress {{.*}} k = 21 selection = exact
// CHECK:       gradcomm.sparse_all_reduce {{.*}} reduction = sum
// CHECK:       gradcomm.memory_update {{.*}} beta = 5.000000e-01
// CHECK-NOT:   shard.all_reduce

// OPTS: remark: gradcomm-scalecom: compressed 'tensor<64x32xf32>' with k = 256 of 2048, selection = exact, beta = 0.5, state @step_arg0_grad
// OPTS: gradcomm.cltk_compress {{.*}} k = 256 selection = exact
// OPTS: gradcomm.memory_update {{.*}} beta = 5.000000e-01

shard.grid @grid(shape = 4)
#mapX = affine_map<(i, j, b) -> (b, i)>
#mapE = affine_map<(i, j, b) -> (b, j)>
#mapG = affine_map<(i, j, b) -> (i, j)>
func.func @step(%w: tensor<64x32xf32>, %x: tensor<16x64xf32>, %t: tensor<16x32xf32>) -> tensor<64x32xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<16x64xf32>
  %ts = shard.shard %t to %s : tensor<16x32xf32>
  %c0 = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x32xf32>
  %z0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.matmul ins(%xs, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %err = linalg.sub ins(%y, %ts : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %g = linalg.generic {indexing_maps = [#mapX, #mapE, #mapG], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xs, %err : tensor<16x64xf32>, tensor<16x32xf32>) outs(%z2 : tensor<64x32xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s2 = arith.addf %acc, %m : f32
      linalg.yield %s2 : f32
  } -> tensor<64x32xf32>
  %lr = arith.constant 0.01 : f32
  %lrt = linalg.fill ins(%lr : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %upd = linalg.mul ins(%g, %lrt : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %wn = linalg.sub ins(%w, %upd : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %wn : tensor<64x32xf32>
}
