# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --momentum 0.9 --weight-decay 0.01 -o %t-sgd.mlir
# RUN: FileCheck %s --check-prefix=SGD --input-file=%t-sgd.mlir
# RUN: gradcomm-opt %t-sgd.mlir > /dev/null
# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --optimizer adam --lr-input -o %t-adam.mlir
# RUN: FileCheck %s --check-prefix=ADAM --input-file=%t-adam.mlir
# RUN: FileCheck %s --check-prefix=ADAM-JSON --input-file=%t-adam.json
# RUN: gradcomm-opt %t-adam.mlir > /dev/null

# SGD with momentum: one buffer per parameter, passed in after the
# parameters and returned after them.
# SGD: %arg.out.bias: tensor<2xf32> {gradcomm.name = "out.bias"},
# SGD-NEXT: %arg.fc.weight.momentum_buffer: tensor<3x4xf32>,
# SGD-NEXT: %arg.fc.bias.momentum_buffer: tensor<3xf32>,
# SGD-NEXT: %arg.out.weight.momentum_buffer: tensor<2x3xf32>,
# SGD-NEXT: %arg.out.bias.momentum_buffer: tensor<2xf32>,
# SGD: -> (tensor<3x4xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>)
# SGD: // Optimizer update (sgd).

# Adam: two moments and a float32 step per parameter; the learning rate
# is an input; the bias corrections use expm1 (exact near 0).
# ADAM: %arg.fc.weight.exp_avg: tensor<3x4xf32>,
# ADAM-NEXT: %arg.fc.weight.exp_avg_sq: tensor<3x4xf32>,
# ADAM-NEXT: %arg.fc.weight.step: tensor<f32>,
# ADAM: %arg.lr: tensor<f32>)
# ADAM: // Optimizer update (adam).
# ADAM: math.expm1
# ADAM: math.sqrt

# ADAM-JSON: "lr": null,
# ADAM-JSON: "optimizer": "adam",
