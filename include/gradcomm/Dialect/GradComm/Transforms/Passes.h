//===- Passes.h - GradComm transformation passes ----------------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_PASSES_H
#define GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_PASSES_H

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gradcomm {

#define GEN_PASS_DECL
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"

} // namespace mlir::gradcomm

#endif // GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_PASSES_H
