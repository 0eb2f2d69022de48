//===- Buffers.cpp - Where a buffer's memory comes from -------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Transforms/Buffers.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

Value gradcomm::rootBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>()) {
    if (view.getViewDest() != value)
      break;
    value = view.getViewSource();
  }
  return value;
}

bool gradcomm::isFreshAllocation(Value root) {
  return isa_and_nonnull<memref::AllocOp, memref::AllocaOp>(
      root.getDefiningOp());
}
