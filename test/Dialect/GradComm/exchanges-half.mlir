// RUN: gradcomm-opt %s --gradcomm-gossip="min-elements=1 report=true" -verify-diagnostics | FileCheck %s --check-prefix=GOSSIP
// RUN: gradcomm-opt %s --gradcomm-easgd="min-elements=1" | FileCheck %s --check-prefix=EASGD
// RUN: gradcomm-opt %s --gradcomm-gossip="min-elements=1 mode=async schedule=random" 2>&1 | FileCheck %s --check-prefix=ASYNC

// A 16-bit model (bf16 weight and gradient, the update computed in f32 and
// rounded once, as gradcomm-export writes it): gossip and EASGD keep the
// gradient local and exchange the bf16 weight, which the runtime sends in
// its own 16 bits. EASGD's center is an f32 state of the weight's shape.
// The asynchronous exchanges' one-sided windows hold f32: left dense.

shard.grid @grid(shape = 2)

// GOSSIP:       gradcomm.state @w_gossip
// GOSSIP-LABEL: func.func @step
// GOSSIP-NOT:   shard.all_reduce
// GOSSIP:       %[[N:.*]] = arith.truncf %{{.*}} : tensor<64x32xf32> to tensor<64x32xbf16>
// GOSSIP:       %[[X:.*]] = gradcomm.gossip_exchange %[[N]] state @w_gossip {{.*}} : tensor<64x32xbf16>
// GOSSIP:       return %[[X]]
// EASGD:        gradcomm.state @w_easgd : tensor<64x32xf32>
// EASGD-LABEL:  func.func @step
// EASGD:        gradcomm.elastic_average %{{.*}} state @w_easgd {{.*}} : tensor<64x32xbf16>
// ASYNC:        warning: gradcomm-gossip: 'bf16' gradient left dense: gossip supports f32 only
// ASYNC-LABEL:  func.func @step
// ASYNC:        shard.all_reduce
// ASYNC-NOT:    gradcomm.gossip_exchange
func.func @step(%w: tensor<64x32xbf16> {gradcomm.name = "w"},
                %g: tensor<64x32xbf16>) -> tensor<64x32xbf16> {
  // expected-remark @+1 {{gradcomm-gossip: gossiped parameter 'w': local gradient, schedule = matching, mixing = 0.5, period = 1, state @w_gossip}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64x32xbf16> -> tensor<64x32xbf16>
  %wide_w = arith.extf %w : tensor<64x32xbf16> to tensor<64x32xf32>
  %wide_r = arith.extf %r : tensor<64x32xbf16> to tensor<64x32xf32>
  %nw = arith.subf %wide_w, %wide_r : tensor<64x32xf32>
  %n = arith.truncf %nw : tensor<64x32xf32> to tensor<64x32xbf16>
  return %n : tensor<64x32xbf16>
}

