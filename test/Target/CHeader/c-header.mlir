// RUN: gradcomm-translate --gradcomm-emit-c-header -split-input-file -verify-diagnostics %s | FileCheck %s

// Public functions at memref level: one descriptor struct per element type
// and rank, a results struct for several results, private functions and
// declarations left out.

// CHECK:      #ifndef GRADCOMM_GENERATED_STEP_H
// CHECK:      #include <stdint.h>
// CHECK:      typedef struct gradcomm_memref_f32_2d {
// CHECK-NEXT:   float *allocated;
// CHECK-NEXT:   float *aligned;
// CHECK-NEXT:   int64_t offset;
// CHECK-NEXT:   int64_t sizes[2];
// CHECK-NEXT:   int64_t strides[2];
// CHECK-NEXT: } gradcomm_memref_f32_2d;
// CHECK:      typedef struct gradcomm_memref_f32_1d {
// CHECK:      typedef struct gradcomm_memref_i64_0d {
// CHECK-NEXT:   int64_t *allocated;
// CHECK-NEXT:   int64_t *aligned;
// CHECK-NEXT:   int64_t offset;
// CHECK-NEXT: } gradcomm_memref_i64_0d;
// CHECK:      typedef struct train_results {
// CHECK-NEXT:   gradcomm_memref_f32_1d r0;
// CHECK-NEXT:   gradcomm_memref_i64_0d r1;
// CHECK-NEXT: } train_results;
// CHECK:      void _mlir_ciface_step(gradcomm_memref_f32_2d *result, gradcomm_memref_f32_2d *arg0, gradcomm_memref_f32_1d *arg1);
// CHECK:      void _mlir_ciface_train(train_results *results, gradcomm_memref_f32_1d *arg0);
// CHECK:      void _mlir_ciface_hook(gradcomm_memref_f32_1d *arg0);
// CHECK-NOT:  helper
// CHECK-NOT:  external
// CHECK:      #endif
func.func @step(%w: memref<4x4xf32>, %b: memref<4xf32>) -> memref<4x4xf32> {
  return %w : memref<4x4xf32>
}
func.func @train(%w: memref<4xf32>) -> (memref<4xf32>, memref<i64>) {
  %c = memref.alloc() : memref<i64>
  return %w, %c : memref<4xf32>, memref<i64>
}
func.func @hook(%g: memref<4xf32>) {
  return
}
func.func private @helper(%g: memref<4xf32>) {
  return
}
func.func private @external(memref<4xf32>)

// -----

// expected-error @+1 {{gradcomm-emit-c-header: cannot express 'memref<4xf16>' in C}}
func.func @half(%w: memref<4xf16>) {
  return
}
