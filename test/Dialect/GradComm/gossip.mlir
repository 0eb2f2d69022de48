// RUN: gradcomm-opt %s --gradcomm-gossip -split-input-file | FileCheck %s

// Plain SGD with an average all-reduce: the local gradient replaces the
// reduced one, the updated parameter is exchanged before it is returned.

shard.grid @grid(shape = 4)

// CHECK:       gradcomm.state @sgd_arg0_gossip{{$}}
// CHECK-LABEL: func.func @sgd
// CHECK-SAME:  (%[[W:.*]]: tensor<64xf32>, %[[G:.*]]: tensor<64xf32>)
// CHECK-NOT:   shard.all_reduce
// CHECK:       %[[U:.*]] = arith.subf %[[W]], %[[G]]
// CHECK:       %[[X:.*]] = gradcomm.gossip_exchange %[[U]] state @sgd_arg0_gossip on @grid grid_axes = [0] schedule = matching mixing = 5.000000e-01 seed = 0 period = 1
// CHECK:       return %[[X]]
func.func @sgd(%w: tensor<64xf32>, %g: tensor<64xf32>) -> tensor<64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %u = arith.subf %w, %r : tensor<64xf32>
  return %u : tensor<64xf32>
}

// -----

// A sum is replaced by n * g (n = 4), so the expected update is unchanged;
// a sum followed by a division by n is then n * g / n: the local gradient.
shard.grid @grid(shape = 4)

// CHECK-LABEL: func.func @sum_then_divide
// CHECK-SAME:  (%[[W:.*]]: tensor<64xf32>, %[[G:.*]]: tensor<64xf32>, %[[N:.*]]: tensor<64xf32>)
// CHECK:       %[[FOUR:.*]] = arith.constant dense<4.000000e+00> : tensor<64xf32>
// CHECK:       %[[NG:.*]] = arith.mulf %[[G]], %[[FOUR]]
// CHECK:       %[[MEAN:.*]] = arith.divf %[[NG]], %[[N]]
// CHECK:       arith.subf %[[W]], %[[MEAN]]
// CHECK:       gradcomm.gossip_exchange
func.func @sum_then_divide(%w: tensor<64xf32>, %g: tensor<64xf32>, %n: tensor<64xf32>) -> tensor<64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = sum
      : tensor<64xf32> -> tensor<64xf32>
  %m = arith.divf %r, %n : tensor<64xf32>
  %u = arith.subf %w, %m : tensor<64xf32>
  return %u : tensor<64xf32>
}

// -----

// SGD with weight decay: w - lr * (g + wd * w). The parameter enters twice;
// one exchange of the returned update.
shard.grid @grid(shape = 2)

// CHECK-LABEL: func.func @weight_decay
// CHECK-COUNT-1: gradcomm.gossip_exchange
// CHECK-NOT:   gradcomm.gossip_exchange
func.func @weight_decay(%w: tensor<64xf32>, %g: tensor<64xf32>, %lr: tensor<64xf32>, %wd: tensor<64xf32>) -> tensor<64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %d = arith.mulf %wd, %w : tensor<64xf32>
  %s = arith.addf %r, %d : tensor<64xf32>
  %step = arith.mulf %lr, %s : tensor<64xf32>
  %u = arith.subf %w, %step : tensor<64xf32>
  return %u : tensor<64xf32>
}

// -----

// Two parameters, two states, two exchanges; the loss stays dense.
shard.grid @grid(shape = 4)

// CHECK:       gradcomm.state @fc_weight_gossip
// CHECK:       gradcomm.state @fc_bias_gossip
// CHECK-LABEL: func.func @two
// CHECK:       shard.all_reduce {{.*}} : tensor<1xf32>
// CHECK:       gradcomm.gossip_exchange {{.*}} state @fc_weight_gossip
// CHECK:       gradcomm.gossip_exchange {{.*}} state @fc_bias_gossip
func.func @two(%w: tensor<8x8xf32> {gradcomm.name = "fc.weight"}, %b: tensor<8xf32> {gradcomm.name = "fc.bias"},
               %gw: tensor<8x8xf32>, %gb: tensor<8xf32>, %loss: tensor<1xf32>)
    -> (tensor<8x8xf32>, tensor<8xf32>, tensor<1xf32>) {
  %rw = shard.all_reduce %gw on @grid grid_axes = [0] reduction = average
      : tensor<8x8xf32> -> tensor<8x8xf32>
  %rb = shard.all_reduce %gb on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %l = shard.all_reduce %loss on @grid grid_axes = [0] reduction = average
      : tensor<1xf32> -> tensor<1xf32>
  %uw = arith.subf %w, %rw : tensor<8x8xf32>
  %ub = arith.subf %b, %rb : tensor<8xf32>
  return %uw, %ub, %l : tensor<8x8xf32>, tensor<8xf32>, tensor<1xf32>
}
