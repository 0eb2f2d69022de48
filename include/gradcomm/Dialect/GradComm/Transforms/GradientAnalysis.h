//===- GradientAnalysis.h - Which all-reduces are gradients -----*- C++ -*-===//
//
// Part of the GradComm project.
//
// Shared by the rewrite passes (ScaleCom, gossip): decides whether an
// all-reduce result is a gradient, finds the parameter it updates, and
// makes the one policy decision both passes share (decideRewrite), so a
// forced policy, a filter or a refusal means the same thing in each.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_GRADIENTANALYSIS_H
#define GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_GRADIENTANALYSIS_H

#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <string>

namespace mlir::gradcomm {

/// What the analysis found about one reduced value.
struct GradientUse {
  /// The value reaches a returned parameter update through elementwise ops.
  bool isGradient = false;
  /// The function argument holding the parameter being updated (null when
  /// none was found).
  BlockArgument parameter;
  /// The return operand holding the updated parameter (null when not a
  /// gradient).
  OpOperand *update = nullptr;
};

/// Follows `reduced` forward through elementwise ops (elementwise linalg
/// ops, ops with the Elementwise trait) to the function's return. It is a
/// gradient when a returned value on that path is computed from a function
/// argument of the same shape as `reduced` (float elements of any width:
/// mixed precision widens a bf16 gradient into an f32 update).
GradientUse analyzeGradient(Value reduced);

/// How many distinct function results `reduced` reaches through elementwise
/// ops: 1 for plain SGD's parameter update, more when the optimizer also
/// returns state computed from the gradient (a momentum buffer, Adam's
/// moments).
int64_t countReturnedUpdates(Value reduced);

/// The parameter's readable name: its `gradcomm.name` argument attribute, or
/// "<function>_arg<N>".
std::string parameterName(BlockArgument parameter);

/// Why `op`, a `shard.all_reduce` or a `shard.reduce_scatter`, cannot be
/// rewritten by a GradComm pass whatever the policy (not sum/average, not a
/// static floating-point tensor, not exactly one grid axis; an all-reduce
/// whose input and result types differ; a reduce-scatter that does not cut
/// axis 0 evenly over a static group), or nullopt.
std::optional<std::string> whyNotRewritable(Operation *op);

/// The tensor a `shard.all_reduce` or `shard.reduce_scatter` reduces.
Value reducedInput(Operation *op);

/// Inserts the unattached declaration `op` (a gradcomm.state) into the
/// symbol table's module, after its leading grid and state declarations,
/// renaming it if its name is taken.
void insertDeclaration(SymbolTable &symbolTable, Operation *op);

/// Pass-level filters of a rewrite (its options).
struct RewriteFilter {
  int64_t minElements = 0;
  ArrayRef<std::string> include;
  ArrayRef<std::string> exclude;
  /// bf16 and f16 gradients are rewritten too (ScaleCom's fused steps send
  /// their values in 16 bits); otherwise f32 only.
  bool halfGradients = false;
};

/// The shared decision for one all-reduce (or reduce-scatter) under one
/// rewrite pass.
struct RewriteDecision {
  /// Rewrite it (true) or leave it dense (false, see `reason`).
  bool rewrite = false;
  /// The user forced this pass's policy with `gradcomm.policy`.
  bool forced = false;
  std::string reason;
  GradientUse use;
  PolicyOverrides overrides;
};

/// Decides what the rewrite for `policy` (ScaleCom or Gossip) does with
/// `op`. Semantics (docs/scalecom.md, "Policies"):
///  * `gradcomm.policy = "dense"`, or another pass's policy: left dense;
///  * forced (`gradcomm.policy` names this pass): the pass-level filters
///    (min-elements, include, exclude) do not apply, and the gradient test
///    is skipped where the rewrite does not need the parameter update
///    (ScaleCom); when the rewrite cannot be done at all (structure,
///    element type, gossip without an update) it is an error, never a
///    silent dense fallback;
///  * otherwise the op must be rewritable, a gradient, pass include /
///    exclude and min-elements, and be f32 (a warning says why not).
/// Fails after emitting a diagnostic prefixed with `passName`.
FailureOr<RewriteDecision> decideRewrite(Operation *op, Policy policy,
                                         const RewriteFilter &filter,
                                         StringRef passName);

/// The static size of the first grid axis `op` (a `shard.all_reduce` or
/// `shard.reduce_scatter`) reduces over (the rewrites accept exactly one),
/// or ShapedType::kDynamic.
int64_t reducedGroupSize(Operation *op);

/// The runtime name of a collective serving `parameter` (null: positional
/// name from the enclosing function and `index`), as the ScaleCom state of
/// the same gradient is named, so counters line up whichever strategy ran.
std::string collectiveName(Operation *op, BlockArgument parameter,
                           int64_t index);

} // namespace mlir::gradcomm

#endif // GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_GRADIENTANALYSIS_H
