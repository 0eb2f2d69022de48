//===- LocalStepRewrite.h - Local step + parameter exchange -----*- C++ -*-===//
//
// Part of the GradComm project.
//
// What gradcomm-gossip and gradcomm-easgd share (docs/gossip.md): each
// accepted gradient all-reduce becomes its unbiased local estimate (g_i for
// an average, n g_i for a sum over a grid axis of static size n, so the
// expected update is unchanged), and the returned parameter it updates
// passes, once, through an exchange op the pass builds before the return.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_LOCALSTEPREWRITE_H
#define GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_LOCALSTEPREWRITE_H

#include "gradcomm/Dialect/GradComm/Transforms/GradientAnalysis.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>

namespace mlir::gradcomm {

/// What an exchange builder made: the exchanged value, and for the
/// report remark a verb ("gossiped") and the details after the gradient
/// (", schedule = ring, ...").
struct Exchange {
  Value value;
  std::string verb;
  std::string details;
};

/// Builds the exchange of the updated parameter `updated` (named
/// `parameter`) with `builder` placed before the return, declaring its
/// state in `symbolTable`.
using ExchangeBuilder =
    std::function<Exchange(OpBuilder &builder, Location loc, Value updated,
                           StringRef parameter, SymbolTable &symbolTable)>;

struct LocalStepRewrite {
  StringRef passName;
  Policy policy;
  RewriteFilter filter;
  bool report = false;
  /// For an all-reduce the shared decision accepted (`groupSize`: the
  /// static size of its grid axis, or dynamic): the exchange to build, or
  /// null with `reason` to leave it dense, or failure (diagnosed).
  std::function<FailureOr<ExchangeBuilder>(
      shard::AllReduceOp op, const RewriteDecision &decision, int64_t groupSize,
      std::string &reason)>
      plan;
};

/// Runs `rewrite` over every shard.all_reduce of `module`. Fails when a
/// diagnostic was emitted.
LogicalResult rewriteToLocalSteps(ModuleOp module,
                                  const LocalStepRewrite &rewrite);

} // namespace mlir::gradcomm

#endif // GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_LOCALSTEPREWRITE_H
