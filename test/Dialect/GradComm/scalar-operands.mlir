// RUN: gradcomm-opt %s --split-input-file --gradcomm-scalar-operands | FileCheck %s

// A learning rate shared by two updates is read once, at the start of the
// block, and both generics use the scalar; their other inputs, maps and
// attributes stay.
// CHECK-LABEL: func.func @shared_learning_rate
// CHECK-SAME:    (%[[P:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>, %[[LR:.*]]: tensor<f32>)
// CHECK-NEXT:    %[[S:.*]] = tensor.extract %[[LR]][] : tensor<f32>
// CHECK-NOT:     tensor.extract
// CHECK:         linalg.generic {indexing_maps = [#[[ID:.*]], #[[ID]], #[[ID]]], iterator_types = ["parallel"]}
// CHECK-SAME:        ins(%[[P]], %[[G]] : tensor<4xf32>, tensor<4xf32>)
// CHECK-SAME:        {keep.me}
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[B]], %[[S]] : f32
// CHECK-NEXT:      arith.subf %[[A]], %[[M]] : f32
// CHECK:         linalg.generic
// CHECK-SAME:        ins(%[[G]] : tensor<4xf32>)
// CHECK:           arith.mulf %{{.*}}, %[[S]] : f32
#id = affine_map<(i) -> (i)>
#s = affine_map<(i) -> ()>
func.func @shared_learning_rate(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %u = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel"]} ins(%p, %g, %lr : tensor<4xf32>, tensor<4xf32>, tensor<f32>) outs(%e : tensor<4xf32>) attrs = {keep.me} {
  ^bb0(%a: f32, %b: f32, %l: f32, %o: f32):
    %m = arith.mulf %b, %l : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %v = linalg.generic {indexing_maps = [#s, #id, #id], iterator_types = ["parallel"]} ins(%lr, %g : tensor<f32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%l: f32, %b: f32, %o: f32):
    %m = arith.mulf %b, %l : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %u, %v : tensor<4xf32>, tensor<4xf32>
}

// -----

// A rank-0 tensor computed in the step is read right after it is made.
// CHECK-LABEL: func.func @computed_scalar
// CHECK:         %[[T:.*]] = tensor.from_elements
// CHECK-NEXT:    %[[S:.*]] = tensor.extract %[[T]][]
// CHECK:         linalg.generic
// CHECK-SAME:        ins(%{{.*}} : tensor<4xf32>)
// CHECK:           arith.addf %{{.*}}, %[[S]]
#id = affine_map<(i) -> (i)>
#s = affine_map<(i) -> ()>
func.func @computed_scalar(%g: tensor<4xf32>, %x: f32) -> tensor<4xf32> {
  %t = tensor.from_elements %x : tensor<f32>
  %e = tensor.empty() : tensor<4xf32>
  %u = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel"]} ins(%g, %t : tensor<4xf32>, tensor<f32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %s = arith.addf %a, %l : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %u : tensor<4xf32>
}

// -----

// Rank-0 outputs stay (only inputs are read as scalars), and ops on
// buffers are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK:         %[[S:.*]] = tensor.extract %[[ACC:.*]][]
// CHECK:         linalg.generic {{.*}} ins(%{{.*}} : tensor<4xf32>) outs(%[[ACC]] : tensor<f32>)
// CHECK:           arith.addf %{{.*}}, %[[S]]
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<4xf32>, memref<f32>)
#id = affine_map<(i) -> (i)>
#s = affine_map<(i) -> ()>
func.func @left_alone(%g: tensor<4xf32>, %acc: tensor<f32>, %mg: memref<4xf32>, %ml: memref<f32>, %mo: memref<4xf32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #s, #s], iterator_types = ["reduction"]} ins(%g, %acc : tensor<4xf32>, tensor<f32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel"]} ins(%mg, %ml : memref<4xf32>, memref<f32>) outs(%mo : memref<4xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %s = arith.addf %a, %l : f32
    linalg.yield %s : f32
  }
  return %r : tensor<f32>
}
