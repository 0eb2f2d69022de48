# RUN: gradcomm-export %S/Inputs/small.py:tiny --batch 2 --ranks 4 --local-loss -o %t.mlir
# RUN: FileCheck %s --input-file=%t.mlir
# RUN: FileCheck %s --input-file=%t.json --check-prefix=MANIFEST
# RUN: gradcomm-compile %t.mlir -o %t.async.mlir --emit=mlir --strategy=gossip-async
# RUN: FileCheck %s --input-file=%t.async.mlir --check-prefix=ASYNC --implicit-check-not=gradcomm_rt_dense_all_reduce_f32
# RUN: not gradcomm-export %S/Inputs/small.py:tiny --batch 2 --ranks 4 --local-loss --reduction sum -o %t.bad.mlir 2>&1 | FileCheck %s --check-prefix=SUM

# --local-loss: the gradients are all-reduced as always, the loss is this
# rank's own (no all-reduce), so an asynchronous strategy's step has no
# collective that waits for the other ranks.
# CHECK-COUNT-4: shard.all_reduce %{{.*}} reduction = average : tensor<
# CHECK-NOT: gradcomm.runtime_name = "loss"
# MANIFEST: "local_loss": true
# ASYNC: gradcomm_rt_gossip_async_f32
# SUM: gradcomm-export: error: local_loss returns the rank's own mean loss: it needs reduction 'average'
