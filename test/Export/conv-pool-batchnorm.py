# RUN: gradcomm-export %S/Inputs/small.py:conv_pool --batch 2 -o %t.mlir
# RUN: FileCheck %s --input-file=%t.mlir
# RUN: FileCheck %s --check-prefix=JSON --input-file=%t.json
# RUN: gradcomm-opt %t.mlir > /dev/null

# Batch-norm buffers are inputs; the ones the step updates are results.
# CHECK: %arg.bn.running_mean: tensor<2xf32>,
# CHECK-NEXT: %arg.bn.running_var: tensor<2xf32>,
# CHECK-NEXT: %arg.bn.num_batches_tracked: tensor<i64>,

# The convolution (stride 2, padding 1) reads the padded input, split into
# (groups, channels per group), through a strided window map.
# CHECK: tensor.insert_slice %arg.input into
# CHECK: affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 * 2 + d7)>
# Max pooling: values and int64 indices in one reduction over the window.
# CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
# CHECK: } -> (tensor<2x2x2x2xf32>, tensor<2x2x2x2xi64>)
# The convolution's weight gradient is computed; its input gradient (the
# output gradient spread by a strided insert_slice) is not: the input
# needs none.
# CHECK: affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d6 * 2 + d3, d7 * 2 + d4)>
# CHECK-NOT: [1, 1, 2, 2] : tensor<2x2x4x4xf32>

# JSON: "name": "bn.running_mean",
# JSON-NEXT: "role": "buffer",
# JSON: "outputs": [
# JSON: "name": "bn.running_mean",
# JSON-NEXT: "role": "buffer",
# JSON: "name": "bn.num_batches_tracked",
# JSON-NEXT: "role": "buffer",
