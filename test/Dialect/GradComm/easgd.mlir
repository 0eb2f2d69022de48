// RUN: gradcomm-opt %s --gradcomm-easgd="report=true" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gradcomm-opt %s --gradcomm-easgd="alpha=0.1 period=4" -split-input-file | FileCheck %s --check-prefix=OPTS

// Plain SGD with an average all-reduce: the local gradient replaces the
// reduced one; the updated parameter is pulled toward its center (a state
// of its type) before it is returned. alpha = 0.9 / 4 by default.

shard.grid @grid(shape = 4)

// CHECK:       gradcomm.state @sgd_arg0_easgd : tensor<64xf32>
// CHECK-LABEL: func.func @sgd
// CHECK-SAME:  (%[[W:.*]]: tensor<64xf32>, %[[G:.*]]: tensor<64xf32>)
// CHECK-NOT:   shard.all_reduce
// CHECK:       %[[U:.*]] = arith.subf %[[W]], %[[G]]
// CHECK:       %[[X:.*]] = gradcomm.elastic_average %[[U]] state @sgd_arg0_easgd on @grid grid_axes = [0] alpha = 2.250000e-01 period = 1 : tensor<64xf32>
// CHECK:       return %[[X]]
// OPTS-LABEL:  func.func @sgd
// OPTS:        gradcomm.elastic_average {{.*}} alpha = 1.000000e-01 period = 4
func.func @sgd(%w: tensor<64xf32>, %g: tensor<64xf32>) -> tensor<64xf32> {
  // expected-remark @+1 {{gradcomm-easgd: elastically averaged parameter 'sgd_arg0': local gradient, alpha = 0.225, period = 1, center @sgd_arg0_easgd}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %u = arith.subf %w, %r : tensor<64xf32>
  return %u : tensor<64xf32>
}

// -----

// A sum becomes n * g; a per-argument period override; a parameter marked
// dense stays dense.
shard.grid @grid(shape = 2)

// CHECK-LABEL: func.func @sum_and_overrides
// CHECK:       %[[TWO:.*]] = arith.constant dense<2.000000e+00> : tensor<8xf32>
// CHECK:       arith.mulf %{{.*}}, %[[TWO]]
// CHECK:       shard.all_reduce
// CHECK:       gradcomm.elastic_average {{.*}} alpha = 4.500000e-01 period = 8
// CHECK-NOT:   gradcomm.elastic_average
// CHECK:       return
func.func @sum_and_overrides(%w: tensor<8xf32> {gradcomm.period = 8 : i64},
                             %g: tensor<8xf32>,
                             %v: tensor<8xf32> {gradcomm.policy = "dense"},
                             %h: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // expected-remark @+1 {{gradcomm-easgd: elastically averaged parameter 'sum_and_overrides_arg0': local gradient * 2, alpha = 0.45, period = 8, center @sum_and_overrides_arg0_easgd}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = sum
      : tensor<8xf32> -> tensor<8xf32>
  %u = arith.subf %w, %r : tensor<8xf32>
  // expected-remark @+1 {{gradcomm-easgd: left dense: marked gradcomm.policy = "dense"}}
  %s = shard.all_reduce %h on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %t = arith.subf %v, %s : tensor<8xf32>
  return %u, %t : tensor<8xf32>, tensor<8xf32>
}

// -----

// A dynamic group: alpha = moving-rate / n is unknown, so the all-reduce
// stays dense and the report says why (option 'alpha' would do).
shard.grid @grid(shape = ?)

// CHECK-LABEL: func.func @dynamic_group
// CHECK:       shard.all_reduce
// OPTS-LABEL:  func.func @dynamic_group
// OPTS:        gradcomm.elastic_average {{.*}} alpha = 1.000000e-01 period = 4
func.func @dynamic_group(%w: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-remark @+1 {{gradcomm-easgd: left dense: alpha = moving-rate / n needs a grid axis of static size (or give option 'alpha')}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %u = arith.subf %w, %r : tensor<8xf32>
  return %u : tensor<8xf32>
}
