//===- GradCommDialect.cpp - GradComm dialect registration ----------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.h"
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"

using namespace mlir;
using namespace mlir::gradcomm;

#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.cpp.inc"

void GradCommDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.cpp.inc"
      >();
}
