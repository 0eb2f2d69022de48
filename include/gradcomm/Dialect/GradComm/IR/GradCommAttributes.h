//===- GradCommAttributes.h - gradcomm.* discardable attributes -*- C++ -*-===//
//
// Part of the GradComm project.
//
// The `gradcomm.*` attributes a user (or the exporter) puts on a
// `shard.all_reduce` or on a parameter's function argument to steer the
// rewrites, and the names the passes stamp for the runtime. The dialect
// verifies every one of them (GradCommDialect.cpp): an unknown `gradcomm.*`
// name or a value of the wrong kind is a verifier error, so the readers here
// can rely on the kinds.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMATTRIBUTES_H
#define GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMATTRIBUTES_H

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::gradcomm {

namespace attr {
/// "dense" | "scalecom" | "gossip" | "easgd": force a policy.
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
/// The name the runtime uses for a communication op in its messages and
/// counters; stamped by the rewrite passes and `gradcomm-name-collectives`,
/// read by `convert-gradcomm-to-runtime`.
inline constexpr llvm::StringLiteral kRuntimeName = "gradcomm.runtime_name";
/// The runtime group ("2x2:0": grid shape, then the axes) of a collective
/// over part of its grid; stamped and read by `convert-gradcomm-to-runtime`.
inline constexpr llvm::StringLiteral kRuntimeGroup = "gradcomm.runtime_group";
/// Marks a function `gradcomm-outline-kernels` created (unit).
inline constexpr llvm::StringLiteral kKernel = "gradcomm.kernel";
/// On the `scf.if` gradcomm-guard-failed-steps wraps a step's writes in.
inline constexpr llvm::StringLiteral kStepGuard = "gradcomm.step_guard";
} // namespace attr

/// What values an attribute takes.
enum class AttrValueKind {
  NonEmptyString,
  PositiveNumber,   // > 0, integer or float
  UnitInterval,     // (0, 1]
  OpenUnitInterval, // (0, 1)
  PositiveInteger,  // >= 1
  PolicyName,
  SelectionName,
  ScheduleName,
  Unit,
};

/// Where an attribute may appear.
enum AttrPlace : unsigned {
  OnAllReduce = 1,  // a shard.all_reduce or shard.reduce_scatter op
  OnArgument = 2,   // a function argument (the parameter)
  OnGradCommOp = 4, // an op of the gradcomm dialect
  OnFunction = 8,   // a function op
  OnStepGuard = 16, // an scf.if op (gradcomm-guard-failed-steps)
};

/// One row of the table of `gradcomm.*` attributes.
struct AttrSpec {
  llvm::StringLiteral name;
  AttrValueKind kind;
  unsigned places;
  llvm::StringLiteral description;
};

/// Every `gradcomm.*` discardable attribute the dialect knows.
llvm::ArrayRef<AttrSpec> getAttrSpecs();

/// Why `value` is not a valid value of `spec`, or nullopt.
std::optional<std::string> checkAttrValue(const AttrSpec &spec,
                                          Attribute value);

/// The per-op / per-parameter overrides of one all-reduce, read from the op
/// and, field by field where the op has none, from the parameter's function
/// argument. The values were verified by the dialect.
struct PolicyOverrides {
  std::optional<Policy> policy;
  std::optional<double> ratio;
  std::optional<int64_t> k;
  std::optional<double> beta;
  std::optional<Selection> selection;
  std::optional<int64_t> chunkSize;
  std::optional<Schedule> schedule;
  std::optional<double> mixing;
  std::optional<int64_t> period;
  /// Where the policy came from, for diagnostics ("op" or "argument").
  std::string policySource;
};

/// `name` with every character outside [A-Za-z0-9_] replaced by '_' (and a
/// leading '_' before a digit), so it can serve as a symbol and a
/// checkpoint key.
std::string sanitizeSymbolName(llvm::StringRef name);

/// `value` as a person writes it ("0.5", "100"), for diagnostics.
std::string formatNumber(double value);

/// Reads the overrides of `op`; `parameter` may be null.
PolicyOverrides readPolicyOverrides(Operation *op, BlockArgument parameter);

} // namespace mlir::gradcomm

#endif // GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMATTRIBUTES_H
