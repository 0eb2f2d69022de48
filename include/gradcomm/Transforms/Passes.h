//===- Passes.h - GradComm's dialect-independent passes ---------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Passes that use no GradComm op or attribute (Passes.td says which);
// the dialect's own are in gradcomm/Dialect/GradComm/Transforms/Passes.h.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_TRANSFORMS_PASSES_H
#define GRADCOMM_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gradcomm {

#define GEN_PASS_DECL
#include "gradcomm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gradcomm/Transforms/Passes.h.inc"

} // namespace mlir::gradcomm

#endif // GRADCOMM_TRANSFORMS_PASSES_H
