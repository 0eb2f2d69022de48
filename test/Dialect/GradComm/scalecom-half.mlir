// RUN: gradcomm-opt %s --gradcomm-scalecom -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gradcomm-opt %s --gradcomm-scalecom="compressor=local-topk" -split-input-file 2>&1 | FileCheck %s --check-prefix=LOCAL

// 16-bit gradients (mixed precision): ScaleCom's fused step, and local
// top-k, compress bf16 and f16 all-reduces; ScaleCom also their
// reduce-scatters. The memory is f32 of the gradient's shape, the
// selected values f32 until they travel (in the gradient's 16 bits, chosen
// by the lowering), the result the gradient's type.

shard.grid @grid(shape = 4)

// CHECK:      gradcomm.state @half_arg0_grad : tensor<2048xf32>
// CHECK-NEXT: gradcomm.state @half_arg2_grad : tensor<2048xf32>
// CHECK-LABEL: func @half
// CHECK:      gradcomm.cltk_compress %{{.*}} state @half_arg0_grad {{.*}} : tensor<2048xf16> -> tensor<21xf32>, tensor<21xi64>
// CHECK-NEXT: gradcomm.sparse_all_reduce {{.*}} -> tensor<2048xf16>
// CHECK-NEXT: gradcomm.memory_update {{.*}} : tensor<2048xf16>, tensor<21xi64>
// CHECK:      gradcomm.cltk_compress %{{.*}} state @half_arg2_grad {{.*}} : tensor<2048xbf16> -> tensor<21xf32>, tensor<21xi64>
// CHECK-NEXT: gradcomm.sparse_all_reduce {{.*}} -> tensor<2048xbf16>
// CHECK-NOT:  shard.all_reduce
// Local top-k takes them too (its k values travel in 16 bits); its memory
// is f32 as well.
// LOCAL:      gradcomm.state @half_arg0_grad : tensor<2048xf32>
// LOCAL-LABEL: func @half
// LOCAL-NOT:  shard.all_reduce
// LOCAL:      gradcomm.local_topk_all_gather %{{.*}} state @half_arg0_grad {{.*}} : tensor<2048xf16> -> tensor<2048xf16>
// LOCAL:      gradcomm.local_topk_all_gather %{{.*}} state @half_arg2_grad {{.*}} : tensor<2048xbf16> -> tensor<2048xbf16>
// LOCAL-NOT:  shard.all_reduce
// LOCAL:      return
func.func @half(%w: tensor<2048xf16>, %g: tensor<2048xf16>,
                %wb: tensor<2048xbf16>, %gb: tensor<2048xbf16>) -> (tensor<2048xf16>, tensor<2048xbf16>) {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf16> -> tensor<2048xf16>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<2048xbf16> -> tensor<2048xbf16>
  %u = arith.subf %w, %r : tensor<2048xf16>
  %ub = arith.subf %wb, %rb : tensor<2048xbf16>
  return %u, %ub : tensor<2048xf16>, tensor<2048xbf16>
}

// -----

// 16-bit reduce-scatters (sharded training in mixed precision): the
// compressed reduce-scatter, its shard in the gradient's type. Local top-k
// has no reduce-scatter form: they stay dense there, as f32 ones do.

shard.grid @grid(shape = 4)

// CHECK:      gradcomm.state @sharded_arg0_grad : tensor<2048xf32>
// CHECK-NEXT: gradcomm.state @sharded_arg2_grad : tensor<4096xf32>
// CHECK-LABEL: func @sharded
// CHECK:      gradcomm.cltk_compress %{{.*}} state @sharded_arg0_grad {{.*}} : tensor<2048xbf16> -> tensor<21xf32>, tensor<21xi64>
// CHECK-NEXT: gradcomm.sparse_reduce_scatter {{.*}} -> tensor<512xbf16>
// CHECK-NEXT: gradcomm.memory_update {{.*}} : tensor<2048xbf16>, tensor<21xi64>
// CHECK:      gradcomm.cltk_compress %{{.*}} state @sharded_arg2_grad {{.*}} : tensor<4096xf16> -> tensor<41xf32>, tensor<41xi64>
// CHECK-NEXT: gradcomm.sparse_reduce_scatter {{.*}} -> tensor<1024xf16>
// CHECK-NOT:  shard.reduce_scatter
// LOCAL-LABEL: func @sharded
// LOCAL-COUNT-2: shard.reduce_scatter
// LOCAL-NOT:  gradcomm.
func.func @sharded(%ws: tensor<512xbf16>, %gs: tensor<2048xbf16>,
                   %wh: tensor<1024xf16>, %gh: tensor<4096xf16>) -> (tensor<512xbf16>, tensor<1024xf16>) {
  %s = shard.reduce_scatter %gs on @grid grid_axes = [0] reduction = average scatter_axis = 0
      : tensor<2048xbf16> -> tensor<512xbf16>
  %h = shard.reduce_scatter %gh on @grid grid_axes = [0] reduction = average scatter_axis = 0
      : tensor<4096xf16> -> tensor<1024xf16>
  %us = arith.subf %ws, %s : tensor<512xbf16>
  %uh = arith.subf %wh, %h : tensor<1024xf16>
  return %us, %uh : tensor<512xbf16>, tensor<1024xf16>
}

// -----

// Other types stay dense with a warning, never silently.

shard.grid @grid(shape = 4)

// CHECK-LABEL: func @dense
// CHECK: shard.all_reduce
// CHECK: shard.reduce_scatter
// CHECK-NOT: gradcomm.
func.func @dense(%w: tensor<2048xf64>, %g: tensor<2048xf64>,
                 %ws: tensor<512xf64>, %gs: tensor<2048xf64>) -> (tensor<2048xf64>, tensor<512xf64>) {
  // expected-warning @+1 {{gradcomm-scalecom: 'f64' gradient left dense: scalecom supports f32, bf16 and f16}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<2048xf64> -> tensor<2048xf64>
  // expected-warning @+1 {{gradcomm-scalecom: 'f64' gradient left dense: scalecom supports f32, bf16 and f16}}
  %s = shard.reduce_scatter %gs on @grid grid_axes = [0] reduction = average scatter_axis = 0
      : tensor<2048xf64> -> tensor<512xf64>
  %u = arith.subf %w, %r : tensor<2048xf64>
  %us = arith.subf %ws, %s : tensor<512xf64>
  return %u, %us : tensor<2048xf64>, tensor<512xf64>
}
