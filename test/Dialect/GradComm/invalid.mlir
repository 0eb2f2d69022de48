// RUN: gradcomm-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// gradcomm.state
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'memory_type' must have f32 elements (f16/bf16 are not supported), got 'tensor<8xf16>'}}
gradcomm.state @half : tensor<8xf16>

// -----

// expected-error @+1 {{'memory_type' must be a statically shaped tensor, got 'tensor<?xf32>'}}
gradcomm.state @dynamic : tensor<?xf32>

// -----

func.func @nested() {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  "gradcomm.state"() {sym_name = "s"} : () -> ()
  return
}

//===----------------------------------------------------------------------===//
// gradcomm.cltk_compress
//===----------------------------------------------------------------------===//

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @k_zero(%g: tensor<16xf32>) {
  // expected-error @+1 {{'k' must be in [1, 16] (the element count), got 0}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 0 selection = exact : tensor<16xf32> -> tensor<0xf32>, tensor<0xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @k_too_large(%g: tensor<16xf32>) {
  // expected-error @+1 {{'k' must be in [1, 16] (the element count), got 17}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 17 selection = exact : tensor<16xf32> -> tensor<17xf32>, tensor<17xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @values_length(%g: tensor<16xf32>) {
  // expected-error @+1 {{'values' must have 4 elements (k), got 'tensor<5xf32>'}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact : tensor<16xf32> -> tensor<5xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @indices_type(%g: tensor<16xf32>) {
  // expected-error @+1 {{'indices' must be a static 1-D tensor of 'i64', got 'tensor<4xi32>'}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @values_type(%g: tensor<16xf32>) {
  // expected-error @+1 {{'values' must be a static 1-D tensor of 'f32', got 'tensor<4xf64>'}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf64>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @f64_input(%g: tensor<16xf64>) {
  // expected-error @+1 {{'input' must have f32, bf16 or f16 elements, got 'tensor<16xf64>'}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact : tensor<16xf64> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @dynamic_input(%g: tensor<?xf32>) {
  // expected-error @+1 {{'input' must be a statically shaped tensor, got 'tensor<?xf32>'}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact : tensor<?xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @chunk_size_missing(%g: tensor<16xf32>) {
  // expected-error @+1 {{'chunk_size' is required with selection = chunk}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = chunk : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @chunk_size_zero(%g: tensor<16xf32>) {
  // expected-error @+1 {{'chunk_size' must be >= 1, got 0}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = chunk chunk_size = 0 : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @chunk_k_mismatch(%g: tensor<16xf32>) {
  // expected-error @+1 {{'k' must be ceil(N / chunk_size) = 3 with selection = chunk, got 4}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = chunk chunk_size = 6 : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @chunk_size_with_exact(%g: tensor<16xf32>) {
  // expected-error @+1 {{'chunk_size' is only valid with selection = chunk}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact chunk_size = 4 : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @bad_selection(%g: tensor<16xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'selection' [exact, chunk]}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = random : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

gradcomm.state @s : tensor<16xf32>
func.func @no_grid(%g: tensor<16xf32>) {
  // expected-error @+1 {{'grid' refers to @missing, which is not a shard.grid}}
  %v, %i = gradcomm.cltk_compress %g state @s on @missing grid_axes = [0] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

gradcomm.state @s : tensor<16xf32>
func.func @grid_is_state(%g: tensor<16xf32>) {
  // expected-error @+1 {{'grid' refers to @s, which is not a shard.grid}}
  %v, %i = gradcomm.cltk_compress %g state @s on @s grid_axes = [0] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @axis_out_of_range(%g: tensor<16xf32>) {
  // expected-error @+1 {{'grid_axes' axis 1 is out of range for grid @grid of rank 1}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [1] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 2x2)
gradcomm.state @s : tensor<16xf32>
func.func @axis_twice(%g: tensor<16xf32>) {
  // expected-error @+1 {{'grid_axes' names axis 1 twice}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [1, 1] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @no_axes(%g: tensor<16xf32>) {
  // expected-error @+1 {{'grid_axes' must name at least one axis}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @no_state(%g: tensor<16xf32>) {
  // expected-error @+1 {{'state' refers to @missing, which is not a gradcomm.state}}
  %v, %i = gradcomm.cltk_compress %g state @missing on @grid grid_axes = [0] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<4x4xf32>
func.func @state_type_mismatch(%g: tensor<16xf32>) {
  // expected-error @+1 {{'state' @s has memory type 'tensor<4x4xf32>', which does not match the tensor type 'tensor<16xf32>'}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @counter
func.func @state_without_memory(%g: tensor<16xf32>) {
  // expected-error @+1 {{'state' @counter has no memory; expected memory of type 'tensor<16xf32>'}}
  %v, %i = gradcomm.cltk_compress %g state @counter on @grid grid_axes = [0] k = 4 selection = exact : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

//===----------------------------------------------------------------------===//
// gradcomm.sparse_all_reduce
//===----------------------------------------------------------------------===//

// -----

shard.grid @grid(shape = 4)
func.func @sar_index_count(%v: tensor<4xf32>, %i: tensor<5xi64>) {
  // expected-error @+1 {{'indices' must have 4 elements (k), got 'tensor<5xi64>'}}
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0] reduction = sum : tensor<4xf32>, tensor<5xi64> -> tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @sar_k_too_large(%v: tensor<32xf32>, %i: tensor<32xi64>) {
  // expected-error @+1 {{'k' must be in [1, 16] (the element count), got 32}}
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0] reduction = sum : tensor<32xf32>, tensor<32xi64> -> tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @sar_values_rank(%v: tensor<2x2xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'values' must be a static 1-D tensor of 'f32', got 'tensor<2x2xf32>'}}
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0] reduction = sum : tensor<2x2xf32>, tensor<4xi64> -> tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @sar_result_type(%v: tensor<4xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'result' must have f32, bf16 or f16 elements, got 'tensor<16xi32>'}}
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0] reduction = sum : tensor<4xf32>, tensor<4xi64> -> tensor<16xi32>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @sar_bad_reduction(%v: tensor<4xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'reduction' [sum, average]}}
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0] reduction = max : tensor<4xf32>, tensor<4xi64> -> tensor<16xf32>
  return
}

// -----

func.func @sar_no_grid(%v: tensor<4xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'grid' refers to @grid, which is not a shard.grid}}
  %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0] reduction = sum : tensor<4xf32>, tensor<4xi64> -> tensor<16xf32>
  return
}

//===----------------------------------------------------------------------===//
// gradcomm.memory_update
//===----------------------------------------------------------------------===//

// -----

gradcomm.state @s : tensor<16xf32>
func.func @beta_zero(%g: tensor<16xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'beta' must be in (0, 1], got 0}}
  gradcomm.memory_update %g, %i state @s beta = 0.0 : tensor<16xf32>, tensor<4xi64>
  return
}

// -----

gradcomm.state @s : tensor<16xf32>
func.func @beta_above_one(%g: tensor<16xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'beta' must be in (0, 1], got 1.5}}
  gradcomm.memory_update %g, %i state @s beta = 1.5 : tensor<16xf32>, tensor<4xi64>
  return
}

// -----

gradcomm.state @s : tensor<16xf32>
func.func @mu_indices_type(%g: tensor<16xf32>, %i: tensor<4xindex>) {
  // expected-error @+1 {{'indices' must be a static 1-D tensor of 'i64', got 'tensor<4xindex>'}}
  gradcomm.memory_update %g, %i state @s beta = 1.0 : tensor<16xf32>, tensor<4xindex>
  return
}

// -----

gradcomm.state @s : tensor<16xf32>
func.func @mu_k_too_large(%g: tensor<16xf32>, %i: tensor<17xi64>) {
  // expected-error @+1 {{'k' must be in [1, 16] (the element count), got 17}}
  gradcomm.memory_update %g, %i state @s beta = 1.0 : tensor<16xf32>, tensor<17xi64>
  return
}

// -----

gradcomm.state @s : tensor<8xf32>
func.func @mu_state_mismatch(%g: tensor<16xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'state' @s has memory type 'tensor<8xf32>', which does not match the tensor type 'tensor<16xf32>'}}
  gradcomm.memory_update %g, %i state @s beta = 1.0 : tensor<16xf32>, tensor<4xi64>
  return
}

// -----

func.func @mu_no_state(%g: tensor<16xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'state' refers to @s, which is not a gradcomm.state}}
  gradcomm.memory_update %g, %i state @s beta = 1.0 : tensor<16xf32>, tensor<4xi64>
  return
}

//===----------------------------------------------------------------------===//
// gradcomm.local_topk_all_gather
//===----------------------------------------------------------------------===//

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @ltk_k(%g: tensor<16xf32>) {
  // expected-error @+1 {{'k' must be in [1, 16] (the element count), got 0}}
  %r = gradcomm.local_topk_all_gather %g state @s on @grid grid_axes = [0] k = 0 reduction = sum : tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @ltk_result(%g: tensor<16xf32>) {
  // expected-error @+1 {{'result' type 'tensor<4x4xf32>' must equal the input type 'tensor<16xf32>'}}
  %r = gradcomm.local_topk_all_gather %g state @s on @grid grid_axes = [0] k = 4 reduction = sum : tensor<16xf32> -> tensor<4x4xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<8xf32>
func.func @ltk_state(%g: tensor<16xf32>) {
  // expected-error @+1 {{'state' @s has memory type 'tensor<8xf32>', which does not match the tensor type 'tensor<16xf32>'}}
  %r = gradcomm.local_topk_all_gather %g state @s on @grid grid_axes = [0] k = 4 reduction = sum : tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @ltk_axis(%g: tensor<16xf32>) {
  // expected-error @+1 {{'grid_axes' axis -1 is out of range for grid @grid of rank 1}}
  %r = gradcomm.local_topk_all_gather %g state @s on @grid grid_axes = [-1] k = 4 reduction = sum : tensor<16xf32> -> tensor<16xf32>
  return
}

//===----------------------------------------------------------------------===//
// gradcomm.gossip_exchange
//===----------------------------------------------------------------------===//

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c

// A 16-bit replica needs the synchronous exchange.
func.func @gossip_async_half(%x: tensor<16xf16>) -> tensor<16xf16> {
  // expected-error @+1 {{'gradcomm.gossip_exchange' op a 'f16' input needs 'mode = sync' (the one-sided windows of 'mode = async' hold f32)}}
  %r = gradcomm.gossip_exchange %x state @c on @grid grid_axes = [0] schedule = random mixing = 0.5 seed = 0 period = 1 mode = async : tensor<16xf16>
  return %r : tensor<16xf16>
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c
func.func @mixing_zero(%x: tensor<16xf32>) {
  // expected-error @+1 {{'mixing' must be in (0, 1), got 0}}
  %r = gradcomm.gossip_exchange %x state @c on @grid grid_axes = [0] schedule = ring mixing = 0.0 seed = 0 period = 1 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c
func.func @mixing_one(%x: tensor<16xf32>) {
  // expected-error @+1 {{'mixing' must be in (0, 1), got 1}}
  %r = gradcomm.gossip_exchange %x state @c on @grid grid_axes = [0] schedule = ring mixing = 1.0 seed = 0 period = 1 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c
func.func @period_zero(%x: tensor<16xf32>) {
  // expected-error @+1 {{'period' must be >= 1, got 0}}
  %r = gradcomm.gossip_exchange %x state @c on @grid grid_axes = [0] schedule = ring mixing = 0.5 seed = 0 period = 0 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c
func.func @negative_seed(%x: tensor<16xf32>) {
  // expected-error @+1 {{'seed' must be >= 0, got -3}}
  %r = gradcomm.gossip_exchange %x state @c on @grid grid_axes = [0] schedule = ring mixing = 0.5 seed = -3 period = 1 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 6)
gradcomm.state @c
func.func @hypercube_not_pow2(%x: tensor<16xf32>) {
  // expected-error @+1 {{'schedule' hypercube needs a group size that is a power of two, got 6}}
  %r = gradcomm.gossip_exchange %x state @c on @grid grid_axes = [0] schedule = hypercube mixing = 0.5 seed = 0 period = 1 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c
func.func @bad_schedule(%x: tensor<16xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'schedule' [matching, ring, hypercube, random]}}
  %r = gradcomm.gossip_exchange %x state @c on @grid grid_axes = [0] schedule = star mixing = 0.5 seed = 0 period = 1 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @m : tensor<16xf32>
func.func @gossip_state_with_memory(%x: tensor<16xf32>) {
  // expected-error @+1 {{'state' @m must be a counter-only state (no memory type), got memory 'tensor<16xf32>'}}
  %r = gradcomm.gossip_exchange %x state @m on @grid grid_axes = [0] schedule = ring mixing = 0.5 seed = 0 period = 1 : tensor<16xf32>
  return
}


// -----

shard.grid @grid(shape = 4)
gradcomm.state @c
func.func @gossip_result_type(%x: tensor<16xf32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %r = "gradcomm.gossip_exchange"(%x) {state = @c, grid = @grid, grid_axes = array<i16: 0>, schedule = 1 : i32, mixing = 0.5 : f64, seed = 0 : i64, period = 1 : i64} : (tensor<16xf32>) -> tensor<8xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c
func.func @random_needs_async(%x: tensor<16xf32>) {
  // expected-error @+1 {{'schedule' random is not a pairing: it needs mode = async}}
  %r = gradcomm.gossip_exchange %x state @c on @grid grid_axes = [0] schedule = random mixing = 0.5 seed = 0 period = 1 : tensor<16xf32>
  return
}

//===----------------------------------------------------------------------===//
// gradcomm.elastic_average
//===----------------------------------------------------------------------===//

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c : tensor<16xf32>
func.func @alpha_zero(%x: tensor<16xf32>) {
  // expected-error @+1 {{'alpha' must be in (0, 1], got 0}}
  %r = gradcomm.elastic_average %x state @c on @grid grid_axes = [0] alpha = 0.0 period = 1 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c : tensor<16xf32>
func.func @period_zero(%x: tensor<16xf32>) {
  // expected-error @+1 {{'period' must be >= 1, got 0}}
  %r = gradcomm.elastic_average %x state @c on @grid grid_axes = [0] alpha = 0.2 period = 0 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c : tensor<16xf32>
func.func @sharded_sync_center(%x: tensor<16xf32>) {
  // expected-error @+1 {{'center = sharded' needs 'mode = async' (the synchronous center is replicated)}}
  %r = gradcomm.elastic_average %x state @c on @grid grid_axes = [0] alpha = 0.2 period = 1 center = sharded : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c : tensor<16xf32>
func.func @overshoot(%x: tensor<16xf32>) {
  // expected-error @+1 {{'alpha' times the group size (the center's moving rate) must be <= 1, got 5.000000e-01 * 4}}
  %r = gradcomm.elastic_average %x state @c on @grid grid_axes = [0] alpha = 0.5 period = 1 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @c
func.func @counter_only_center(%x: tensor<16xf32>) {
  // expected-error @+1 {{state}}
  %r = gradcomm.elastic_average %x state @c on @grid grid_axes = [0] alpha = 0.2 period = 1 : tensor<16xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @recipe_negative_warmup(%g: tensor<16xf32>) {
  // expected-error @+1 {{'warmup_steps' must be >= 0, got -3}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact {warmup_steps = -3 : i64} : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @recipe_ramp_without_steps(%g: tensor<16xf32>) {
  // expected-error @+1 {{'warmup_ramp_from' needs 'warmup_steps'}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact {warmup_ramp_from = 2.0 : f32} : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @recipe_ramp_below_one(%g: tensor<16xf32>) {
  // expected-error @+1 {{'warmup_ramp_from' must be >= 1, got 5.000000e-01}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact {warmup_steps = 3 : i64, warmup_ramp_from = 0.5 : f32} : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @recipe_ramp_chunk(%g: tensor<16xf32>) {
  // expected-error @+1 {{a ramp warm-up ('warmup_ramp_from') needs selection = exact}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = chunk chunk_size = 4 {warmup_steps = 3 : i64, warmup_ramp_from = 2.0 : f32} : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
func.func @recipe_bad_clip(%g: tensor<16xf32>) {
  // expected-error @+1 {{'clip' must be finite and > 0, got 0.000000e+00}}
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact {clip = 0.0 : f32} : tensor<16xf32> -> tensor<4xf32>, tensor<4xi64>
  return
}

//===----------------------------------------------------------------------===//
// gradcomm.sparse_reduce_scatter
//===----------------------------------------------------------------------===//

// -----

shard.grid @grid(shape = 4)
func.func @srs_scatter_axis(%v: tensor<4xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'scatter_axis' must be 0 (a shard is then one contiguous run of the flat indices), got 1}}
  %r = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0] reduction = sum scatter_axis = 1 : tensor<4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @srs_k_too_large(%v: tensor<65xf32>, %i: tensor<65xi64>) {
  // expected-error @+1 {{'k' must be in [1, 64] (the element count of the unsharded gradient, 4 shards of 'tensor<4x4xf32>'), got 65}}
  %r = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<65xf32>, tensor<65xi64> -> tensor<4x4xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @srs_index_count(%v: tensor<4xf32>, %i: tensor<5xi64>) {
  // expected-error @+1 {{'indices' must have 4 elements (k), got 'tensor<5xi64>'}}
  %r = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<4xf32>, tensor<5xi64> -> tensor<4x4xf32>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @srs_scalar(%v: tensor<1xf32>, %i: tensor<1xi64>) {
  // expected-error @+1 {{'result' must have rank >= 1 (it is cut along 'scatter_axis')}}
  %r = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<1xf32>, tensor<1xi64> -> tensor<f32>
  return
}

// -----

shard.grid @grid(shape = 4)
func.func @srs_result_type(%v: tensor<4xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'result' must have f32, bf16 or f16 elements, got 'tensor<4x4xf64>'}}
  %r = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<4xf32>, tensor<4xi64> -> tensor<4x4xf64>
  return
}

// -----

// A 16-bit gradient's memory is f32 of its shape, not the gradient's type.
shard.grid @grid(shape = 4)
gradcomm.state @s : tensor<16xf32>
gradcomm.state @t : tensor<8xf32>
func.func @half_memory(%g: tensor<16xbf16>) {
  %v, %i = gradcomm.cltk_compress %g state @s on @grid grid_axes = [0] k = 4 selection = exact : tensor<16xbf16> -> tensor<4xf32>, tensor<4xi64>
  // expected-error @+1 {{'state' @t has memory type 'tensor<8xf32>', which does not match the tensor type 'tensor<16xf32>'}}
  gradcomm.memory_update %g, %i state @t beta = 0.5 : tensor<16xbf16>, tensor<4xi64>
  return
}
