// RUN: gradcomm-opt %s --gradcomm-gossip="report=true" -verify-diagnostics | FileCheck %s

// An update the pass cannot recognize (through a non-elementwise op) is
// left dense, with the report saying why.
shard.grid @grid(shape = 4)

// CHECK-LABEL: func.func @unrecognized
// CHECK:       shard.all_reduce
// CHECK-NOT:   gradcomm.gossip_exchange
func.func @unrecognized(%w: tensor<64xf32>, %g: tensor<64xf32>) -> tensor<64xf32> {
  // expected-remark @+1 {{gradcomm-gossip: left dense: not a gradient: the result does not reach a returned parameter update through elementwise ops}}
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %s = tensor.extract_slice %r[0] [64] [1] : tensor<64xf32> to tensor<64xf32>
  %c = tensor.cast %s : tensor<64xf32> to tensor<64xf32>
  %u = arith.subf %w, %c : tensor<64xf32>
  return %u : tensor<64xf32>
}
