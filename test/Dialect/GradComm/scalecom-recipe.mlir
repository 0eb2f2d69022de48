// The training recipe's options (docs/scalecom.md, "The recipe") become
// attributes of each cltk_compress. By default the recipe's 100-step dense
// warm-up and beta 0.5; with warmup-steps=0 no attribute is set; the
// local-topk compressor has no warm-up by default and refuses one.
// RUN: gradcomm-opt %s --gradcomm-scalecom | FileCheck %s --check-prefix=DEFAULT
// RUN: gradcomm-opt %s --gradcomm-scalecom="warmup-steps=0" | FileCheck %s --check-prefix=PLAIN
// RUN: gradcomm-opt %s --gradcomm-scalecom="compressor=local-topk" | FileCheck %s --check-prefix=LOCAL
// RUN: gradcomm-opt %s --gradcomm-scalecom="warmup-steps=100 clip=2" | FileCheck %s --check-prefix=DENSE
// RUN: gradcomm-opt %s --gradcomm-scalecom="warmup-steps=50 warmup=ramp warmup-start-ratio=8" | FileCheck %s --check-prefix=RAMP
// RUN: not gradcomm-opt %s --gradcomm-scalecom="warmup=linear" 2>&1 | FileCheck %s --check-prefix=BAD-WARMUP
// RUN: not gradcomm-opt %s --gradcomm-scalecom="warmup=ramp warmup-steps=0" 2>&1 | FileCheck %s --check-prefix=RAMP-NO-STEPS
// RUN: not gradcomm-opt %s --gradcomm-scalecom="warmup=ramp warmup-steps=5 selection=chunk" 2>&1 | FileCheck %s --check-prefix=RAMP-CHUNK
// RUN: not gradcomm-opt %s --gradcomm-scalecom="warmup-steps=-2" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not gradcomm-opt %s --gradcomm-scalecom="clip=-1" 2>&1 | FileCheck %s --check-prefix=BAD-CLIP
// RUN: not gradcomm-opt %s --gradcomm-scalecom="compressor=local-topk warmup-steps=5" 2>&1 | FileCheck %s --check-prefix=TOPK

shard.grid @grid(shape = 4)

// DEFAULT: gradcomm.cltk_compress {{.*}} k = 21 selection = exact {warmup_steps = 100 : i64} :
// DEFAULT: gradcomm.memory_update {{.*}} beta = 5.000000e-01
// LOCAL: gradcomm.local_topk_all_gather
// LOCAL-NOT: warmup
// PLAIN: gradcomm.cltk_compress
// PLAIN-NOT: warmup
// PLAIN-NOT: clip
// DENSE: gradcomm.cltk_compress {{.*}} k = 21 selection = exact {clip = 2.000000e+00 : f32, warmup_steps = 100 : i64}
// RAMP: gradcomm.cltk_compress {{.*}} {warmup_ramp_from = 8.000000e+00 : f32, warmup_steps = 50 : i64}
// BAD-WARMUP: option 'warmup' must be dense or ramp, got 'linear'
// RAMP-NO-STEPS: warmup=ramp needs warmup-steps > 0 and selection=exact
// RAMP-CHUNK: warmup=ramp needs warmup-steps > 0 and selection=exact
// NEGATIVE: option 'warmup-steps' must be >= 0 (or -1 for the recipe's default), got -2
// BAD-CLIP: option 'clip' must be finite and >= 0, got -1
// TOPK: warm-up and clipping are ScaleCom's recipe; compressor=local-topk does not take them
func.func @step(%w: tensor<2048xf32>, %g: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf32> -> tensor<2048xf32>
  %u = arith.subf %w, %r : tensor<2048xf32>
  return %u : tensor<2048xf32>
}
