# RUN: gradcomm-export %S/Inputs/small.py:conv_pool --batch 2 -o %t.mlir
# RUN: FileCheck %s --input-file=%t.mlir
# RUN: FileCheck %s --check-prefix=JSON --input-file=%t.json
# RUN: gradcomm-opt %t.mlir > /dev/null

# Batch-norm buffers are inputs; the ones the step updates are results.
# CHECK: %arg.bn.running_mean: tensor<2xf32>,
# CHECK-NEXT: %arg.bn.running_var: tensor<2xf32>,
# CHECK-NEXT: %arg.bn.num_batches_tracked: tensor<i64>,

# The convolution (stride 2, padding 1): im2col of the padded input
# (loops c, kh, kw, n, oh, ow, through a strided window map), then one
# matrix product with the weight as (f, c * kh * kw).
# CHECK: tensor.insert_slice %arg.input into
# CHECK: affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d4 * 2 + d1, d5 * 2 + d2)>
# CHECK-SAME: outs({{.*}} : tensor<1x3x3x2x4x4xf32>)
# CHECK: tensor.collapse_shape {{.*}} : tensor<1x3x3x2x4x4xf32> into tensor<288xf32>
# CHECK: iterator_types = ["parallel", "parallel", "reduction"]
# CHECK-SAME: ins({{.*}} : tensor<2x9xf32>, tensor<9x32xf32>)
# Max pooling: values and int64 indices in one reduction over the window.
# CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
# CHECK: } -> (tensor<2x2x2x2xf32>, tensor<2x2x2x2xi64>)
# The convolution's weight gradient is computed (the output gradient as
# (f, n * oh * ow) times the im2col matrix, transposed); its input gradient
# (the output gradient spread by a strided insert_slice) is not: the input
# needs none.
# CHECK: affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d4 * 2 + d1, d5 * 2 + d2)>
# CHECK: affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>
# CHECK-SAME: ins({{.*}} : tensor<2x32xf32>, tensor<9x32xf32>)
# CHECK-NOT: [1, 1, 2, 2] : tensor<2x2x4x4xf32>

# JSON: "name": "bn.running_mean",
# JSON-NEXT: "role": "buffer",
# JSON: "outputs": [
# JSON: "name": "bn.running_mean",
# JSON-NEXT: "role": "buffer",
# JSON: "name": "bn.num_batches_tracked",
# JSON-NEXT: "role": "buffer",
