//===- LinalgToBlas.h - Matrix products as BLAS calls -----------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_CONVERSION_LINALGTOBLAS_LINALGTOBLAS_H
#define GRADCOMM_CONVERSION_LINALGTOBLAS_LINALGTOBLAS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gradcomm {

#define GEN_PASS_DECL_CONVERTLINALGTOBLASPASS
#include "gradcomm/Conversion/Passes.h.inc"

} // namespace mlir::gradcomm

#endif // GRADCOMM_CONVERSION_LINALGTOBLAS_LINALGTOBLAS_H
