//===- ScaleComRewrite.cpp - shard.all_reduce -> ScaleCom ops -------------===//
//
// Part of the GradComm project.
//
// Rewrites gradient all-reduces into cltk_compress + sparse_all_reduce +
// memory_update with a module-level state per gradient. See
// docs/scalecom.md for the policy and ARCHITECTURE.md section 2 for the
// semantics.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/Dialect/GradComm/Transforms/GradientAnalysis.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <cstdio>
#include <optional>

namespace mlir::gradcomm {
#define GEN_PASS_DEF_SCALECOMREWRITEPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

namespace {

/// The compression parameters resolved for one gradient.
struct CompressionPlan {
  int64_t k = 0;
  double beta = 1.0;
  Selection selection = Selection::Exact;
  std::optional<int64_t> chunkSize;
};

/// What the pass does with one all-reduce.
struct Decision {
  bool compress = false;
  /// Why it stays dense (when !compress).
  std::string reason;
  BlockArgument parameter;
  CompressionPlan plan;
};

class ScaleComRewritePass
    : public gradcomm::impl::ScaleComRewritePassBase<ScaleComRewritePass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult validateOptions();
  FailureOr<Decision> decide(shard::AllReduceOp op);
  FailureOr<CompressionPlan>
  makePlan(shard::AllReduceOp op, BlockArgument parameter, int64_t numElements);
  void rewrite(shard::AllReduceOp op, const Decision &decision,
               SymbolTable &symbolTable);
};

} // namespace

static constexpr llvm::StringLiteral kPass = "gradcomm-scalecom";

static FailureOr<std::optional<double>>
readNumber(Operation *op, BlockArgument parameter, StringRef name) {
  return readNumberOverride(op, parameter, name, kPass);
}

static FailureOr<std::optional<std::string>>
readString(Operation *op, BlockArgument parameter, StringRef name) {
  return readStringOverride(op, parameter, name, kPass);
}

LogicalResult ScaleComRewritePass::validateOptions() {
  ModuleOp module = getOperation();
  if (!(ratio > 0.0))
    return module.emitError()
           << "gradcomm-scalecom: option 'ratio' must be > 0, got "
           << formatNumber(ratio);
  if (!(beta > 0.0 && beta <= 1.0))
    return module.emitError()
           << "gradcomm-scalecom: option 'beta' must be in (0, 1], got "
           << formatNumber(beta);
  if (k < 0)
    return module.emitError()
           << "gradcomm-scalecom: option 'k' must be >= 1 (or 0 for ratio), "
              "got "
           << int64_t(k);
  if (chunkSize < 0)
    return module.emitError() << "gradcomm-scalecom: option 'chunk-size' "
                                 "must be >= 1 (or 0 for round(ratio)), got "
                              << int64_t(chunkSize);
  if (compressor != "cltk" && compressor != "local-topk")
    return module.emitError() << "gradcomm-scalecom: option 'compressor' "
                                 "must be cltk or local-topk, got '"
                              << compressor << "'";
  if (minElements < 0)
    return module.emitError()
           << "gradcomm-scalecom: option 'min-elements' must be >= 0, got "
           << int64_t(minElements);
  return success();
}

FailureOr<CompressionPlan>
ScaleComRewritePass::makePlan(shard::AllReduceOp op, BlockArgument parameter,
                              int64_t numElements) {
  auto fail = [&]() { return op->emitError() << "gradcomm-scalecom: "; };
  FailureOr<std::optional<double>> ratioOverride =
      readNumber(op, parameter, policy_attr::kRatio);
  FailureOr<std::optional<double>> kOverride =
      readNumber(op, parameter, policy_attr::kK);
  FailureOr<std::optional<double>> betaOverride =
      readNumber(op, parameter, policy_attr::kBeta);
  FailureOr<std::optional<double>> chunkOverride =
      readNumber(op, parameter, policy_attr::kChunkSize);
  FailureOr<std::optional<std::string>> selectionOverride =
      readString(op, parameter, policy_attr::kSelection);
  if (failed(ratioOverride) || failed(kOverride) || failed(betaOverride) ||
      failed(chunkOverride) || failed(selectionOverride))
    return failure();

  CompressionPlan plan;
  plan.beta = betaOverride->value_or(beta);
  if (!(plan.beta > 0.0 && plan.beta <= 1.0))
    return fail() << "'beta' must be in (0, 1], got "
                  << formatNumber(plan.beta);

  plan.selection = selection;
  if (*selectionOverride) {
    std::optional<Selection> parsed = symbolizeSelection(**selectionOverride);
    if (!parsed)
      return fail() << "'" << policy_attr::kSelection
                    << "' must be \"exact\" or \"chunk\", got \""
                    << **selectionOverride << "\"";
    plan.selection = *parsed;
  }

  double planRatio = ratioOverride->value_or(ratio);
  if (!(planRatio > 0.0))
    return fail() << "'ratio' must be > 0, got " << formatNumber(planRatio);
  std::optional<int64_t> explicitK;
  if (*kOverride)
    explicitK = static_cast<int64_t>(**kOverride);
  else if (k > 0)
    explicitK = k;

  if (plan.selection == Selection::Chunk) {
    int64_t c =
        chunkOverride->has_value()
            ? static_cast<int64_t>(**chunkOverride)
            : (chunkSize > 0 ? int64_t(chunkSize) : std::llround(planRatio));
    if (c < 1)
      return fail() << "'chunk_size' must be >= 1, got " << c;
    plan.chunkSize = c;
    plan.k = llvm::divideCeil(numElements, c);
    if (explicitK && *explicitK != plan.k)
      return fail() << "'k' = " << *explicitK
                    << " conflicts with selection = chunk, which gives k = "
                       "ceil(N / chunk_size) = "
                    << plan.k;
    return plan;
  }

  plan.k = explicitK ? *explicitK
                     : static_cast<int64_t>(std::ceil(
                           static_cast<double>(numElements) / planRatio));
  if (plan.k < 1 || plan.k > numElements)
    return fail() << "k = " << plan.k << " is outside [1, " << numElements
                  << "] (the element count of this gradient)";
  return plan;
}

FailureOr<Decision> ScaleComRewritePass::decide(shard::AllReduceOp op) {
  Decision decision;
  auto dense = [&](const Twine &reason) {
    decision.reason = reason.str();
    return decision;
  };

  if (std::optional<std::string> reason = whyNotRewritable(op))
    return dense(*reason);
  auto type = cast<RankedTensorType>(op.getInput().getType());

  GradientUse use = analyzeGradient(op.getResult());
  decision.parameter = use.parameter;
  FailureOr<std::optional<std::string>> policy =
      readString(op, use.parameter, policy_attr::kPolicy);
  if (failed(policy))
    return failure();
  bool forced = false;
  if (*policy) {
    if (**policy == "dense")
      return dense("marked gradcomm.policy = \"dense\"");
    if (**policy == "gossip")
      return dense("marked gradcomm.policy = \"gossip\" (not this pass)");
    if (**policy != "scalecom")
      return op->emitError()
             << "gradcomm-scalecom: '" << policy_attr::kPolicy
             << "' must be \"dense\", \"scalecom\" or \"gossip\", got \""
             << **policy << "\"";
    forced = true;
  }
  if (!forced && !use.isGradient)
    return dense("not a gradient: the result does not reach a returned "
                 "parameter update through elementwise ops");

  if (use.parameter) {
    std::string name = parameterName(use.parameter);
    if (!include.empty() && !llvm::is_contained(include, name))
      return dense("parameter '" + name + "' is not in 'include'");
    if (llvm::is_contained(exclude, name))
      return dense("parameter '" + name + "' is in 'exclude'");
  }
  if (!type.getElementType().isF32()) {
    op->emitWarning() << "gradcomm-scalecom: " << type.getElementType()
                      << " gradient left dense: ScaleCom supports f32 "
                         "gradients only";
    return dense("element type is not f32");
  }
  int64_t numElements = type.getNumElements();
  if (!forced && numElements < minElements)
    return dense(Twine(numElements) + " elements < min-elements (" +
                 Twine(int64_t(minElements)) + ")");

  FailureOr<CompressionPlan> plan = makePlan(op, use.parameter, numElements);
  if (failed(plan))
    return failure();
  decision.compress = true;
  decision.plan = *plan;
  return decision;
}

void ScaleComRewritePass::rewrite(shard::AllReduceOp op,
                                  const Decision &decision,
                                  SymbolTable &symbolTable) {
  MLIRContext *ctx = &getContext();
  auto type = cast<RankedTensorType>(op.getInput().getType());
  const CompressionPlan &plan = decision.plan;

  // State named after the parameter it serves; SymbolTable::insert makes it
  // unique in the module.
  std::string base;
  if (decision.parameter) {
    base = parameterName(decision.parameter);
  } else {
    auto func = op->getParentOfType<FunctionOpInterface>();
    base =
        (func ? func.getName().str() : std::string("module")) + "_all_reduce";
  }
  // Created unattached, then placed with the other declarations.
  OpBuilder declarationBuilder(ctx);
  auto state =
      StateOp::create(declarationBuilder, op.getLoc(),
                      sanitizeSymbolName(base + "_grad"), TypeAttr::get(type));
  insertDeclaration(symbolTable, state);
  auto stateRef = FlatSymbolRefAttr::get(state.getSymNameAttr());

  OpBuilder b(op);
  Reduction reduction = op.getReduction() == shard::ReductionKind::Average
                            ? Reduction::Average
                            : Reduction::Sum;
  Value replacement;
  if (compressor == "local-topk") {
    replacement = LocalTopkAllGatherOp::create(
        b, op.getLoc(), type, op.getInput(), stateRef, op.getGridAttr(),
        op.getGridAxesAttr(), b.getI64IntegerAttr(plan.k),
        ReductionAttr::get(ctx, reduction));
  } else {
    auto valuesType = RankedTensorType::get({plan.k}, b.getF32Type());
    auto indicesType = RankedTensorType::get({plan.k}, b.getI64Type());
    IntegerAttr chunkAttr =
        plan.chunkSize ? b.getI64IntegerAttr(*plan.chunkSize) : IntegerAttr();
    auto compress = CltkCompressOp::create(
        b, op.getLoc(), valuesType, indicesType, op.getInput(), stateRef,
        op.getGridAttr(), op.getGridAxesAttr(), b.getI64IntegerAttr(plan.k),
        SelectionAttr::get(ctx, plan.selection), chunkAttr);
    replacement = SparseAllReduceOp::create(
        b, op.getLoc(), type, compress.getValues(), compress.getIndices(),
        op.getGridAttr(), op.getGridAxesAttr(),
        ReductionAttr::get(ctx, reduction));
    MemoryUpdateOp::create(b, op.getLoc(), op.getInput(), compress.getIndices(),
                           stateRef, b.getF64FloatAttr(plan.beta));
  }

  if (report)
    op->emitRemark() << "gradcomm-scalecom: compressed " << type
                     << " with k = " << plan.k << " of "
                     << type.getNumElements()
                     << ", selection = " << stringifySelection(plan.selection)
                     << (plan.chunkSize ? ", chunk_size = " +
                                              std::to_string(*plan.chunkSize)
                                        : std::string())
                     << ", beta = " << formatNumber(plan.beta) << ", state @"
                     << state.getSymName();
  op.getResult().replaceAllUsesWith(replacement);
  op.erase();
}

void ScaleComRewritePass::runOnOperation() {
  if (failed(validateOptions()))
    return signalPassFailure();
  ModuleOp module = getOperation();
  SmallVector<shard::AllReduceOp> allReduces;
  module.walk([&](shard::AllReduceOp op) { allReduces.push_back(op); });

  SymbolTable symbolTable(module);
  bool failedAny = false;
  for (shard::AllReduceOp op : allReduces) {
    FailureOr<Decision> decision = decide(op);
    if (failed(decision)) {
      failedAny = true;
      continue;
    }
    if (!decision->compress) {
      if (report)
        op->emitRemark() << "gradcomm-scalecom: left dense: "
                         << decision->reason;
      continue;
    }
    rewrite(op, *decision, symbolTable);
  }
  if (failedAny)
    signalPassFailure();
}
