//===- Buffers.h - Where a buffer's memory comes from ----------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Shared by the passes that must know whether two buffers may overlap
// (gradcomm-outline-kernels' noalias arguments, gradcomm-convert-linalg-to-
// blas's BLAS calls).
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_TRANSFORMS_BUFFERS_H
#define GRADCOMM_TRANSFORMS_BUFFERS_H

#include "mlir/IR/Value.h"

namespace mlir::gradcomm {

/// The buffer `value` is a view of: view-like ops (casts, subviews,
/// reshapes, transposes) are looked through.
Value rootBuffer(Value value);

/// Is `root` a fresh allocation: memory nothing else points to except
/// views of it.
bool isFreshAllocation(Value root);

} // namespace mlir::gradcomm

#endif // GRADCOMM_TRANSFORMS_BUFFERS_H
