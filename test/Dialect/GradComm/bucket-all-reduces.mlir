// RUN: gradcomm-opt %s --split-input-file --gradcomm-bucket-all-reduces="report=true" --verify-diagnostics | FileCheck %s
// RUN: gradcomm-opt %s --split-input-file --gradcomm-bucket-all-reduces="bucket-elements=10" | FileCheck %s --check-prefix=SMALL
// RUN: not gradcomm-opt %s --split-input-file --gradcomm-bucket-all-reduces="bucket-elements=0" 2>&1 | FileCheck %s --check-prefix=BAD

// Neighbouring dense all-reduces of one kind become one call on a flat
// buffer; each result is its slice, reshaped back (rank 0 and rank 2
// included). An all-reduce of another reduction starts its own bucket.

shard.grid @grid(shape = 4)

// CHECK-LABEL: func @three
// CHECK:       %[[E:.*]] = tensor.empty() : tensor<17xf32>
// CHECK:       %[[I0:.*]] = tensor.insert_slice %arg0 into %[[E]][0] [8] [1]
// CHECK:       %[[C1:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1]]
// CHECK:       %[[I1:.*]] = tensor.insert_slice %[[C1]] into %[[I0]][8] [8] [1]
// CHECK:       %[[X2:.*]] = tensor.expand_shape %arg2 [] output_shape [1]
// CHECK:       %[[I2:.*]] = tensor.insert_slice %[[X2]] into %[[I1]][16] [1] [1]
// CHECK:       %[[R:.*]] = shard.all_reduce %[[I2]] on @grid grid_axes = [0] reduction = average {gradcomm.policy = "dense"} : tensor<17xf32> -> tensor<17xf32>
// CHECK:       %[[S0:.*]] = tensor.extract_slice %[[R]][0] [8] [1]
// CHECK:       %[[S1:.*]] = tensor.extract_slice %[[R]][8] [8] [1]
// CHECK:       %[[B:.*]] = tensor.expand_shape %[[S1]] {{\[\[}}0, 1]] output_shape [2, 4]
// CHECK:       %[[S2:.*]] = tensor.extract_slice %[[R]][16] [1] [1]
// CHECK:       %[[C:.*]] = tensor.collapse_shape %[[S2]] []
// CHECK:       %[[D:.*]] = shard.all_reduce %arg3 on @grid grid_axes = [0] : tensor<100xf32>
// CHECK:       return %[[S0]], %[[B]], %[[C]], %[[D]]
// SMALL-LABEL: func @three
// SMALL-NOT:   tensor.insert_slice
// SMALL-COUNT-4: shard.all_reduce
func.func @three(%g0: tensor<8xf32>, %g1: tensor<2x4xf32>, %g2: tensor<f32>, %g3: tensor<100xf32>)
    -> (tensor<8xf32>, tensor<2x4xf32>, tensor<f32>, tensor<100xf32>) {
  %a = shard.all_reduce %g0 on @grid grid_axes = [0] reduction = average : tensor<8xf32> -> tensor<8xf32>
  %b = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = average : tensor<2x4xf32> -> tensor<2x4xf32>
  // expected-remark @+1 {{gradcomm-bucket-all-reduces: 3 all-reduces, 17 elements, in one call}}
  %c = shard.all_reduce %g2 on @grid grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
  %d = shard.all_reduce %g3 on @grid grid_axes = [0] reduction = sum : tensor<100xf32> -> tensor<100xf32>
  return %a, %b, %c, %d : tensor<8xf32>, tensor<2x4xf32>, tensor<f32>, tensor<100xf32>
}

// -----

// A later all-reduce whose input needs a member's result closes the
// bucket and opens the next.
shard.grid @grid(shape = 4)

// CHECK-LABEL: func @used_between
// CHECK:       shard.all_reduce %arg0
// CHECK:       arith.addf
// CHECK:       %[[R:.*]] = shard.all_reduce %{{.*}} {gradcomm.policy = "dense"} : tensor<16xf32>
func.func @used_between(%g0: tensor<8xf32>, %g1: tensor<8xf32>, %g2: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %a = shard.all_reduce %g0 on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %s = arith.addf %a, %g1 : tensor<8xf32>
  %b = shard.all_reduce %s on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  // expected-remark @+1 {{2 all-reduces, 16 elements}}
  %c = shard.all_reduce %g2 on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %a, %b, %c : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A parameter update between the all-reduces uses a member's result but
// feeds no later member: it moves below the fused call. A call with side
// effects cannot move: nothing after it joins the bucket.
shard.grid @grid(shape = 4)
func.func private @observe(tensor<8xf32>)

// CHECK-LABEL: func @moved
// CHECK:       %[[R:.*]] = shard.all_reduce %{{.*}} {gradcomm.policy = "dense"} : tensor<16xf32>
// CHECK:       %[[A:.*]] = tensor.extract_slice %[[R]][0] [8] [1]
// CHECK:       %[[B:.*]] = tensor.extract_slice %[[R]][8] [8] [1]
// CHECK:       arith.subf %arg0, %[[A]]
// CHECK:       arith.subf %arg2, %[[B]]
// CHECK-LABEL: func @pinned
// CHECK:       %[[A:.*]] = shard.all_reduce %arg0
// CHECK:       call @observe(%[[A]])
// CHECK:       shard.all_reduce %arg1
// CHECK-NOT:   gradcomm.policy
func.func @moved(%w0: tensor<8xf32>, %g0: tensor<8xf32>, %w1: tensor<8xf32>, %g1: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>) {
  %a = shard.all_reduce %g0 on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %u0 = arith.subf %w0, %a : tensor<8xf32>
  // expected-remark @+1 {{2 all-reduces, 16 elements}}
  %b = shard.all_reduce %g1 on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %u1 = arith.subf %w1, %b : tensor<8xf32>
  return %u0, %u1 : tensor<8xf32>, tensor<8xf32>
}

func.func @pinned(%g0: tensor<8xf32>, %g1: tensor<8xf32>) -> tensor<8xf32> {
  %a = shard.all_reduce %g0 on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  call @observe(%a) : (tensor<8xf32>) -> ()
  %b = shard.all_reduce %g1 on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// Left alone: a user's setting, another grid axis, a dynamic shape.
shard.grid @grid2(shape = 2x2)

// CHECK-LABEL: func @alone
// CHECK-NOT:   tensor.insert_slice
// CHECK-COUNT-4: shard.all_reduce
func.func @alone(%g0: tensor<8xf32>, %g1: tensor<8xf32>, %g2: tensor<?xf32>, %g3: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<?xf32>, tensor<8xf32>) {
  %a = shard.all_reduce %g0 on @grid2 grid_axes = [0] {gradcomm.ratio = 4.0} : tensor<8xf32> -> tensor<8xf32>
  %b = shard.all_reduce %g1 on @grid2 grid_axes = [1] : tensor<8xf32> -> tensor<8xf32>
  %c = shard.all_reduce %g2 on @grid2 grid_axes = [1] : tensor<?xf32> -> tensor<?xf32>
  %d = shard.all_reduce %g3 on @grid2 grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %a, %b, %c, %d : tensor<8xf32>, tensor<8xf32>, tensor<?xf32>, tensor<8xf32>
}

// BAD: error: gradcomm-bucket-all-reduces: option 'bucket-elements' must be >= 1, got 0

// -----

// After the ScaleCom rewrite (as gradcomm-compile --bucket-elements runs
// it): the large gradient is compressed, the two small ones (below
// min-elements) share one dense call.
// RUN: gradcomm-opt %s --split-input-file --gradcomm-scalecom --gradcomm-bucket-all-reduces | FileCheck %s --check-prefix=AFTER
shard.grid @grid(shape = 4)

// AFTER-LABEL: func @after_scalecom
// AFTER:       gradcomm.cltk_compress %arg1
// AFTER:       shard.all_reduce %{{.*}} {gradcomm.policy = "dense"} : tensor<96xf32> -> tensor<96xf32>
// AFTER-NOT:   shard.all_reduce
func.func @after_scalecom(%w0: tensor<4096xf32>, %g0: tensor<4096xf32>,
                          %w1: tensor<64xf32>, %g1: tensor<64xf32>,
                          %w2: tensor<32xf32>, %g2: tensor<32xf32>)
    -> (tensor<4096xf32>, tensor<64xf32>, tensor<32xf32>) {
  %r0 = shard.all_reduce %g0 on @grid grid_axes = [0] reduction = average : tensor<4096xf32> -> tensor<4096xf32>
  %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = average : tensor<64xf32> -> tensor<64xf32>
  // Without the rewrite (the first RUN line), all three share a bucket.
  // expected-remark @+1 {{3 all-reduces, 4192 elements}}
  %r2 = shard.all_reduce %g2 on @grid grid_axes = [0] reduction = average : tensor<32xf32> -> tensor<32xf32>
  %u0 = arith.subf %w0, %r0 : tensor<4096xf32>
  %u1 = arith.subf %w1, %r1 : tensor<64xf32>
  %u2 = arith.subf %w2, %r2 : tensor<32xf32>
  return %u0, %u1, %u2 : tensor<4096xf32>, tensor<64xf32>, tensor<32xf32>
}
