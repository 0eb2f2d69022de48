// A step returning two new buffers (sum and product): its C wrapper stores
// each result field as soon as it is computed into a stack copy and hands
// the copy to the caller at the end (tools/gradcomm-compile/
// WrapperLiveRanges.cpp). load-pair-step.c calls it with the result
// aliasing an argument descriptor.
shard.grid @grid(shape = 1)
func.func @pair(%a: tensor<4xf32> {bufferization.writable = false},
                %b: tensor<4xf32> {bufferization.writable = false})
    -> (tensor<4xf32>, tensor<4xf32>) {
  %sum = arith.addf %a, %b : tensor<4xf32>
  %product = arith.mulf %a, %b : tensor<4xf32>
  return %sum, %product : tensor<4xf32>, tensor<4xf32>
}
