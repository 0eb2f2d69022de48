// RUN: gradcomm-opt %s --gradcomm-scalecom="selection=exact" | FileCheck %s --check-prefix=EXACT
// RUN: gradcomm-opt %s --gradcomm-scalecom="selection=chunk chunk-size=64" | FileCheck %s --check-prefix=CHUNK
// RUN: gradcomm-opt %s --gradcomm-scalecom="selection=chunk ratio=30" | FileCheck %s --check-prefix=CHUNKRATIO
// RUN: gradcomm-opt %s --gradcomm-scalecom="selection=chunk chunk-size=1000" | FileCheck %s --check-prefix=RAGGED

// N = 2000. chunk: k = ceil(N / chunk_size); chunk_size defaults to
// round(ratio).

shard.grid @grid(shape = 4)

// EXACT:      gradcomm.cltk_compress {{.*}} k = 20 selection = exact {warmup_steps = 100 : i64} :
// CHUNK:      gradcomm.cltk_compress {{.*}} k = 32 selection = chunk chunk_size = 64 {warmup_steps = 100 : i64} : tensor<2000xf32> -> tensor<32xf32>, tensor<32xi64>
// CHUNKRATIO: gradcomm.cltk_compress {{.*}} k = 67 selection = chunk chunk_size = 30 {warmup_steps = 100 : i64} :
// RAGGED:     gradcomm.cltk_compress {{.*}} k = 2 selection = chunk chunk_size = 1000 {warmup_steps = 100 : i64} :
func.func @step(%w: tensor<2000xf32>, %g: tensor<2000xf32>) -> tensor<2000xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = sum
      : tensor<2000xf32> -> tensor<2000xf32>
  %u = arith.subf %w, %r : tensor<2000xf32>
  return %u : tensor<2000xf32>
}
