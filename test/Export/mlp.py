# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --ranks 4 -o %t.mlir
# RUN: FileCheck %s --input-file=%t.mlir
# RUN: gradcomm-opt %t.mlir > /dev/null
# Upstream MLIR 22 reads it as it is.
# RUN: mlir-opt %t.mlir > /dev/null
# Deterministic: the same model gives the same text.
# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --ranks 4 -o %t2.mlir
# RUN: diff %t.mlir %t2.mlir
# RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t.json

# One grid, the parameters named from the module, the per-rank batch, and
# the target classes as int64.
# CHECK: shard.grid @grid(shape = 4)
# CHECK: func.func @step(
# CHECK-NEXT: %arg.fc.weight: tensor<3x4xf32> {gradcomm.name = "fc.weight"},
# CHECK-NEXT: %arg.fc.bias: tensor<3xf32> {gradcomm.name = "fc.bias"},
# CHECK-NEXT: %arg.out.weight: tensor<2x3xf32> {gradcomm.name = "out.weight"},
# CHECK-NEXT: %arg.out.bias: tensor<2xf32> {gradcomm.name = "out.bias"},
# CHECK-NEXT: %arg.input: tensor<2x4xf32>,
# CHECK-NEXT: %arg.target: tensor<2xi64>)
# CHECK-NEXT: -> (tensor<3x4xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>)

# The forward and backward are linalg on tensors: addmm's product is a
# contraction, relu a select, the loss reads the target's class with
# tensor.extract.
# CHECK: iterator_types = ["parallel", "parallel", "reduction"]
# CHECK: arith.cmpf ugt
# CHECK: tensor.extract

# Every gradient, then the loss (a metric with its runtime name), is
# averaged over the data-parallel axis, before the update.
# CHECK-COUNT-4: shard.all_reduce %{{.*}} on @grid grid_axes = [0] reduction = average : tensor<
# CHECK: shard.all_reduce %{{.*}} on @grid grid_axes = [0] reduction = average {gradcomm.runtime_name = "loss"} : tensor<1xf32>
# CHECK: // Optimizer update (sgd).
# CHECK: return

# MANIFEST: "batch": 2,
# MANIFEST: "function": "step",
# MANIFEST: "inputs": [
# MANIFEST: "name": "fc.weight",
# MANIFEST-NEXT: "role": "parameter",
# MANIFEST: "name": "target",
# MANIFEST: "outputs": [
# MANIFEST: "name": "loss",
# MANIFEST: "ranks": 4,
# MANIFEST: "reduction": "average"
