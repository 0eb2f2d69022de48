// RUN: gradcomm-opt %s --gradcomm-drop-in-place-results | FileCheck %s

// CHECK-LABEL: func.func @public_step(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>) -> memref<4xf32>
// CHECK:       return %[[FRESH:.*]] : memref<4xf32>
func.func @public_step(%a: memref<4xf32>, %b: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>) {
  %fresh = memref.alloc() : memref<4xf32>
  %cast = memref.cast %b : memref<4xf32> to memref<?xf32>
  %back = memref.cast %cast : memref<?xf32> to memref<4xf32>
  return %a, %fresh, %back : memref<4xf32>, memref<4xf32>, memref<4xf32>
}

// Private functions and declarations are left to upstream.
// CHECK-LABEL: func.func private @private_step(%{{.*}}: memref<4xf32>) -> memref<4xf32>
func.func private @private_step(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}
