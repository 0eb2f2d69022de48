//===- GradCommOps.h - GradComm operations ----------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMOPS_H
#define GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMOPS_H

#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "gradcomm/Dialect/GradComm/IR/GradCommEnums.h.inc"

namespace mlir::gradcomm {

/// Side-effect resource: the persistent per-rank state owned by the runtime.
struct StateResource : public SideEffects::Resource::Base<StateResource> {
  StringRef getName() final { return "GradCommState"; }
};

/// Side-effect resource: the communicator every collective uses.
struct CommResource : public SideEffects::Resource::Base<CommResource> {
  StringRef getName() final { return "GradCommComm"; }
};

} // namespace mlir::gradcomm

#define GET_OP_CLASSES
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h.inc"

#endif // GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMOPS_H
