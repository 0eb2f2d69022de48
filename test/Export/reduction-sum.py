# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --ranks 4 --reduction sum -o %t.mlir
# RUN: FileCheck %s --input-file=%t.mlir
# RUN: gradcomm-opt %t.mlir > /dev/null

# `sum`: the local loss is scaled by 1/4 (0x3E800000) before the backward,
# so the summed gradients are those of the global-batch mean, as with
# `average`; the loss metric is the scaled one (its sum is the mean).
# CHECK: arith.constant 0x3E800000 : f32
# CHECK: arith.mulf
# CHECK-COUNT-4: shard.all_reduce %{{.*}} reduction = sum : tensor<
# CHECK: shard.all_reduce %{{.*}} reduction = sum {gradcomm.runtime_name = "loss"}
# CHECK-NOT: reduction = average
