//===- GradCommToRuntime.h - Lower GradComm to runtime calls ----*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_CONVERSION_GRADCOMMTORUNTIME_GRADCOMMTORUNTIME_H
#define GRADCOMM_CONVERSION_GRADCOMMTORUNTIME_GRADCOMMTORUNTIME_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gradcomm {

#define GEN_PASS_DECL_CONVERTGRADCOMMTORUNTIMEPASS
#include "gradcomm/Conversion/Passes.h.inc"

} // namespace mlir::gradcomm

#endif // GRADCOMM_CONVERSION_GRADCOMMTORUNTIME_GRADCOMMTORUNTIME_H
