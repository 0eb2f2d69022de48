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
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gradcomm {

#define GEN_PASS_DECL_CONVERTGRADCOMMTORUNTIMEPASS
#include "gradcomm/Conversion/Passes.h.inc"

/// Adds the patterns that lower gradcomm ops, `shard.all_reduce` and the
/// shard process queries in `module` to runtime calls. Every communication
/// op must carry `gradcomm.runtime_name` (`gradcomm-name-collectives`); the
/// runtime declarations and constant strings are created in `module`, once
/// each, under symbol names unique in it. Every status goes to
/// `gradcomm_rt_check`, or with `recordStatuses` to `gradcomm_rt_record`
/// (on-error=return).
void populateGradCommToRuntimeConversionPatterns(RewritePatternSet &patterns,
                                                 ModuleOp module,
                                                 bool recordStatuses = false);

} // namespace mlir::gradcomm

#endif // GRADCOMM_CONVERSION_GRADCOMMTORUNTIME_GRADCOMMTORUNTIME_H
