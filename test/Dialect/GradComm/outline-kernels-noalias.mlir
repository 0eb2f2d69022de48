// RUN: gradcomm-opt %s --gradcomm-outline-kernels --split-input-file | FileCheck %s

// gradcomm-outline-kernels marks a kernel's buffer arguments `llvm.noalias`
// where every call proves it: a written buffer disjoint from every other
// argument, a read-only buffer disjoint from every written one. Only fresh
// allocations are known to be disjoint (from each other and from the
// step's arguments); two arguments of the step may be the same memory.

#id = affine_map<(i) -> (i)>

// Written: a fresh allocation; read: two arguments that may overlap each
// other (allowed: neither is written).
// CHECK-LABEL: func.func private @fresh__kernel_0(
// CHECK-SAME:  %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: memref<64xf32> {llvm.noalias}, %{{.*}}: memref<64xf32> {llvm.noalias})
func.func @fresh(%a: memref<64xf32>, %b: memref<64xf32>) -> memref<64xf32> {
  %out = memref.alloc() : memref<64xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  }
  return %out : memref<64xf32>
}

// -----

#id = affine_map<(i) -> (i)>

// Written: an argument; read: another argument. The caller may pass one
// buffer for both (an in-place update), so nothing is marked.
// CHECK-LABEL: func.func private @in_place__kernel_0(
// CHECK-NOT:   llvm.noalias
// CHECK-SAME:  attributes
func.func @in_place(%w: memref<64xf32>, %g: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%g : memref<64xf32>) outs(%w : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.subf %y, %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>

// Written and read: the same allocation, once through a reshape (a view:
// the root is the allocation for both).
// CHECK-LABEL: func.func private @views__kernel_0(
// CHECK-NOT:   llvm.noalias
// CHECK-SAME:  attributes {gradcomm.kernel, llvm.bareptr
func.func @views() -> memref<128xf32> {
  %buffer = memref.alloc() : memref<128xf32>
  %matrix = memref.expand_shape %buffer [[0, 1]] output_shape [2, 64] : memref<128xf32> into memref<2x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i * 64 + j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%buffer : memref<128xf32>) outs(%matrix : memref<2x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  }
  return %buffer : memref<128xf32>
}

// -----

#id = affine_map<(i) -> (i)>

// One kernel, two calls: the first proves it, the second (a buffer chosen
// by control flow, which may be the argument it reads) does not. The
// merged kernel is not marked.
// CHECK-LABEL: func.func private @merged__kernel_0(
// CHECK-NOT:   llvm.noalias
// CHECK-SAME:  attributes
// CHECK-NOT:   func.func private @merged__kernel_2
// CHECK-LABEL: func.func @merged(
// CHECK:       call @merged__kernel_0(%arg0, %[[FRESH:.*]])
// CHECK:       %[[CHOSEN:.*]] = scf.if
// CHECK:       call @merged__kernel_0(%arg0, %[[CHOSEN]])
func.func @merged(%a: memref<64xf32>, %c: i1) {
  %out = memref.alloc() : memref<64xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<64xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  }
  %chosen = scf.if %c -> memref<64xf32> {
    scf.yield %a : memref<64xf32>
  } else {
    scf.yield %out : memref<64xf32>
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<64xf32>) outs(%chosen : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  }
  memref.dealloc %out : memref<64xf32>
  return
}

// -----

#id = affine_map<(i) -> (i)>

// Dynamically shaped buffers pass as descriptors, where LLVM's noalias
// does not reach: not marked.
// CHECK-LABEL: func.func private @dynamic__kernel_0(
// CHECK-NOT:   llvm.noalias
// CHECK-SAME:  attributes
func.func @dynamic(%a: memref<?xf32>, %n: index) -> memref<?xf32> {
  %out = memref.alloc(%n) : memref<?xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return %out : memref<?xf32>
}
