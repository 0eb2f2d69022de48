// RUN: gradcomm-opt %s --gradcomm-scalecom | FileCheck %s

// The input below is what upstream partitioning made of the single-device
// linear-regression step in scalecom-pipeline.mlir:
//   gradcomm-opt scalecom-pipeline.mlir \
//     --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))"
// The weight gradient contracts over the sharded batch, so the partitioner
// adds a `sum` all-reduce; its result feeds the SGD update of %arg0.

// CHECK:       gradcomm.state @step_arg0_grad : tensor<64x32xf32>
// CHECK-LABEL: func.func @step
// CHECK:       %[[G:.*]] = linalg.generic
// CHECK:       %[[V:.*]], %[[I:.*]] = gradcomm.cltk_compress %[[G]] state @step_arg0_grad on @grid grid_axes = [0] k = 21 selection = exact
// CHECK:       %[[R:.*]] = gradcomm.sparse_all_reduce %[[V]], %[[I]] on @grid grid_axes = [0] reduction = sum
// CHECK:       gradcomm.memory_update %[[G]], %[[I]] state @step_arg0_grad beta = 5.000000e-01
// CHECK:       linalg.mul ins(%[[R]],
// CHECK-NOT:   shard.all_reduce

#map = affine_map<(d0, d1, d2) -> (d2, d0)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  shard.grid @grid(shape = 4)
  func.func @step(%arg0: tensor<64x32xf32>, %arg1: tensor<4x64xf32>, %arg2: tensor<4x32xf32>) -> tensor<64x32xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<4x32xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x32xf32>) -> tensor<4x32xf32>
    %2 = linalg.matmul ins(%arg1, %arg0 : tensor<4x64xf32>, tensor<64x32xf32>) outs(%1 : tensor<4x32xf32>) -> tensor<4x32xf32>
    %3 = linalg.sub ins(%2, %arg2 : tensor<4x32xf32>, tensor<4x32xf32>) outs(%0 : tensor<4x32xf32>) -> tensor<4x32xf32>
    %4 = tensor.empty() : tensor<64x32xf32>
    %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %proc_linear_idx = shard.process_multi_index on @grid axes = [0] : index
    %grid_shape = shard.grid_shape @grid axes = [0] : index
    %c0 = arith.constant 0 : index
    %6 = arith.cmpi eq, %proc_linear_idx, %c0 : index
    %7 = scf.if %6 -> (tensor<64x32xf32>) {
      scf.yield %5 : tensor<64x32xf32>
    } else {
      %12 = tensor.empty() : tensor<64x32xf32>
      %cst_1 = arith.constant 0.000000e+00 : f32
      %13 = linalg.fill ins(%cst_1 : f32) outs(%12 : tensor<64x32xf32>) -> tensor<64x32xf32>
      scf.yield %13 : tensor<64x32xf32>
    }
    %8 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg1, %3 : tensor<4x64xf32>, tensor<4x32xf32>) outs(%7 : tensor<64x32xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %12 = arith.mulf %in, %in_1 : f32
      %13 = arith.addf %out, %12 : f32
      linalg.yield %13 : f32
    } -> tensor<64x32xf32>
    %all_reduce = shard.all_reduce %8 on @grid grid_axes = [0] : tensor<64x32xf32> -> tensor<64x32xf32>
    %cst_0 = arith.constant 0.00999999977 : f32
    %9 = linalg.fill ins(%cst_0 : f32) outs(%4 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %10 = linalg.mul ins(%all_reduce, %9 : tensor<64x32xf32>, tensor<64x32xf32>) outs(%4 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %11 = linalg.sub ins(%arg0, %10 : tensor<64x32xf32>, tensor<64x32xf32>) outs(%4 : tensor<64x32xf32>) -> tensor<64x32xf32>
    return %11 : tensor<64x32xf32>
  }
}

