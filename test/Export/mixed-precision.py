# Mixed precision (docs/export.md, "Mixed precision"): a bf16 model keeps
# its types in the signature, computes each op in f32 and rounds its
# result once; its gradients are all-reduced in bf16.
# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --ranks 2 --dtype bf16 --momentum 0.9 -o %t.bf16.mlir
# RUN: FileCheck %s --check-prefix=BF16 --input-file=%t.bf16.mlir
# RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t.bf16.json
# Upstream MLIR 22 reads it as it is.
# RUN: mlir-opt %t.bf16.mlir > /dev/null

# BF16: func.func @step(
# BF16-NEXT: %arg.fc.weight: tensor<3x4xbf16> {gradcomm.name = "fc.weight"},
# BF16: %arg.out.bias: tensor<2xbf16> {gradcomm.name = "out.bias"},
# BF16-NEXT: %arg.fc.weight.momentum_buffer: tensor<3x4xbf16>,
# BF16: %arg.input: tensor<2x4xbf16>,
# BF16-NEXT: %arg.target: tensor<2xi64>)
# BF16-NEXT: -> (tensor<3x4xbf16>, tensor<3xbf16>, tensor<2x3xbf16>, tensor<2xbf16>, tensor<3x4xbf16>,
# BF16: arith.extf %{{.*}} : bf16 to f32
# BF16: arith.truncf %{{.*}} : f32 to bf16
# BF16-COUNT-4: shard.all_reduce %{{.*}} reduction = average : tensor<{{.*}}xbf16> -> tensor<{{.*}}xbf16>
# BF16: "loss"} : tensor<1xbf16>
# BF16: // Optimizer update (sgd).
# BF16-NOT: f64

# MANIFEST: "autocast": null,
# MANIFEST: "dtype": "bf16",
# MANIFEST-NEXT: "name": "fc.weight",

# ScaleCom compresses the bf16 gradients, and the step compiles: the
# runtime's 16-bit entry points, no bf16 arithmetic left for LLVM.
# RUN: gradcomm-opt %t.bf16.mlir --gradcomm-scalecom="ratio=2 min-elements=1" | FileCheck %s --check-prefix=SCALECOM
# SCALECOM-COUNT-4: gradcomm.cltk_compress {{.*}}tensor<{{.*}}xbf16>
# RUN: gradcomm-compile %t.bf16.mlir -o %t.bf16.ll --emit=llvm --strategy=scalecom --ratio=2 --min-elements=1
# RUN: FileCheck %s --check-prefix=LLVM --input-file=%t.bf16.ll
# LLVM-DAG: declare {{.*}}@_mlir_ciface_gradcomm_rt_scalecom_recipe_bf16(
# LLVM-DAG: declare {{.*}}@_mlir_ciface_gradcomm_rt_dense_all_reduce_bf16(
# RUN: FileCheck %s --check-prefix=NOBF16 --input-file=%t.bf16.ll
# NOBF16-NOT: fptrunc float {{.*}} to bfloat
# NOBF16-NOT: fpext bfloat
# NOBF16-NOT: load bfloat
# NOBF16-NOT: store bfloat

# Under autocast the weights, their gradients and the loss stay f32; the
# matrix products read bf16 copies.
# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --ranks 2 --autocast bf16 -o %t.ac.mlir
# RUN: FileCheck %s --check-prefix=AUTOCAST --input-file=%t.ac.mlir
# RUN: FileCheck %s --check-prefix=AUTOCAST-MANIFEST --input-file=%t.ac.json
# AUTOCAST: %arg.fc.weight: tensor<3x4xf32> {gradcomm.name = "fc.weight"},
# AUTOCAST: %arg.input: tensor<2x4xf32>,
# AUTOCAST: arith.truncf %{{.*}} : f32 to bf16
# AUTOCAST-COUNT-4: shard.all_reduce %{{.*}} reduction = average : tensor<{{.*}}xf32> -> tensor<{{.*}}xf32>
# AUTOCAST-MANIFEST: "autocast": "bf16",

# f16 the same way.
# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --dtype f16 -o %t.f16.mlir
# RUN: FileCheck %s --check-prefix=F16 --input-file=%t.f16.mlir
# F16: %arg.fc.weight: tensor<3x4xf16> {gradcomm.name = "fc.weight"},
# F16: shard.all_reduce %{{.*}} : tensor<3x4xf16> -> tensor<3x4xf16>

# Errors: both at once; a type the exporter does not take.
# RUN: not gradcomm-export %S/Inputs/small.py:tiny --batch 2 --dtype bf16 --autocast bf16 -o %t.x.mlir 2>&1 | FileCheck %s --check-prefix=BOTH
# BOTH: gradcomm-export: error: --dtype bf16 and --autocast: choose one (a 16-bit model has no float32 weights to autocast)
# RUN: not gradcomm-export %S/Inputs/small.py:tiny_double --batch 2 -o %t.x.mlir 2>&1 | FileCheck %s --check-prefix=DOUBLE
# DOUBLE: gradcomm-export: error: 'fc.weight' has dtype torch.float64; GradComm exports float32, bfloat16, float16, int64 and bool tensors
