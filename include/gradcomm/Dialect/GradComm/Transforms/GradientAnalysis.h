//===- GradientAnalysis.h - Which all-reduces are gradients -----*- C++ -*-===//
//
// Part of the GradComm project.
//
// Shared by the rewrite passes (ScaleCom, gossip): decides whether an
// all-reduce result is a gradient, finds the parameter it updates, and reads
// the per-op / per-argument policy attributes.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_GRADIENTANALYSIS_H
#define GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_GRADIENTANALYSIS_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <string>

namespace mlir::gradcomm {

/// Attributes a user puts on a `shard.all_reduce` or on a parameter's
/// function argument to steer the rewrites. The op's attribute wins.
namespace policy_attr {
/// "dense" | "scalecom" | "gossip": force a policy.
inline constexpr llvm::StringLiteral kPolicy = "gradcomm.policy";
/// Readable, stable name of a parameter (function argument attribute).
inline constexpr llvm::StringLiteral kName = "gradcomm.name";
inline constexpr llvm::StringLiteral kRatio = "gradcomm.ratio";
inline constexpr llvm::StringLiteral kK = "gradcomm.k";
inline constexpr llvm::StringLiteral kBeta = "gradcomm.beta";
inline constexpr llvm::StringLiteral kSelection = "gradcomm.selection";
inline constexpr llvm::StringLiteral kChunkSize = "gradcomm.chunk_size";
inline constexpr llvm::StringLiteral kSchedule = "gradcomm.schedule";
inline constexpr llvm::StringLiteral kMixing = "gradcomm.mixing";
inline constexpr llvm::StringLiteral kPeriod = "gradcomm.period";
} // namespace policy_attr

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
/// argument of the same type as `reduced`.
GradientUse analyzeGradient(Value reduced);

/// The override attribute `name` from `op`, else from the parameter's
/// function argument, else null.
Attribute lookupOverride(Operation *op, BlockArgument parameter,
                         StringRef name);

/// The parameter's readable name: its `gradcomm.name` argument attribute, or
/// "<function>_arg<N>".
std::string parameterName(BlockArgument parameter);

/// `name` with every character outside [A-Za-z0-9_] replaced by '_', so it
/// can serve as a symbol and a checkpoint key.
std::string sanitizeSymbolName(StringRef name);

/// Why `op` cannot be rewritten by a GradComm pass whatever the policy
/// (not sum/average, not a static floating-point tensor with equal input
/// and result types, not exactly one grid axis), or nullopt.
std::optional<std::string> whyNotRewritable(shard::AllReduceOp op);

/// A numeric override (`gradcomm.ratio`, ...) of `op` or its parameter:
/// absent, a number, or a diagnostic (prefixed with `pass`) when the
/// attribute is not a number.
FailureOr<std::optional<double>> readNumberOverride(Operation *op,
                                                    BlockArgument parameter,
                                                    StringRef name,
                                                    StringRef pass);

/// A string override (`gradcomm.policy`, ...), as readNumberOverride.
FailureOr<std::optional<std::string>>
readStringOverride(Operation *op, BlockArgument parameter, StringRef name,
                   StringRef pass);

/// `value` as a person writes it ("0.5", "100"), for diagnostics.
std::string formatNumber(double value);

/// Inserts the unattached declaration `op` (a gradcomm.state) into the
/// symbol table's module, after its leading grid and state declarations,
/// renaming it if its name is taken.
void insertDeclaration(SymbolTable &symbolTable, Operation *op);

} // namespace mlir::gradcomm

#endif // GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_GRADIENTANALYSIS_H
