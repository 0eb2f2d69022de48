// A step named `step` (glibc exports a legacy `step`), built with
// gradcomm-compile --emit=shared and loaded by load-shared-step.c and
// load_shared_step.py.
shard.grid @grid(shape = 1)
func.func @step(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<4xf32> -> tensor<4xf32>
  %u = arith.subf %w, %r : tensor<4xf32>
  return %u : tensor<4xf32>
}
