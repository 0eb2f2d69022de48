//===- EasgdRewrite.cpp - gradient all-reduce -> local step + EASGD -------===//
//
// Part of the GradComm project.
//
// See the pass description in Passes.td and docs/gossip.md. The rewrite of
// the gradient is gradcomm-gossip's (LocalStepRewrite.h); only the
// exchange differs.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/Dialect/GradComm/Transforms/LocalStepRewrite.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_EASGDREWRITEPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

static constexpr llvm::StringLiteral kPass = "gradcomm-easgd";

namespace {

class EasgdRewritePass
    : public gradcomm::impl::EasgdRewritePassBase<EasgdRewritePass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult validateOptions();
  /// The exchange for `op`, a reason to stay dense, or failure (diagnosed).
  FailureOr<ExchangeBuilder> plan(shard::AllReduceOp op,
                                  const RewriteDecision &decision,
                                  int64_t groupSize, std::string &reason);
};

} // namespace

LogicalResult EasgdRewritePass::validateOptions() {
  ModuleOp module = getOperation();
  if (!(alpha >= 0.0 && alpha <= 1.0))
    return module.emitError()
           << kPass << ": option 'alpha' must be in "
           << "(0, 1] (or 0: moving-rate / n), got " << formatNumber(alpha);
  if (!(movingRate > 0.0 && movingRate <= 1.0))
    return module.emitError() << kPass << ": option 'moving-rate' must be in "
                              << "(0, 1], got " << formatNumber(movingRate);
  if (period < 1)
    return module.emitError() << kPass << ": option 'period' must be >= 1, "
                              << "got " << int64_t(period);
  if (minElements < 0)
    return module.emitError() << kPass << ": option 'min-elements' must be "
                              << ">= 0, got " << int64_t(minElements);
  if (center == CenterPlacement::Sharded && mode != ExchangeMode::Async)
    return module.emitError() << kPass << ": option 'center=sharded' needs "
                              << "'mode=async' (the synchronous center is "
                              << "replicated)";
  return success();
}

FailureOr<ExchangeBuilder>
EasgdRewritePass::plan(shard::AllReduceOp op, const RewriteDecision &decision,
                       int64_t groupSize, std::string &reason) {
  double chosenAlpha = alpha;
  if (chosenAlpha == 0.0) {
    if (ShapedType::isDynamic(groupSize)) {
      const char *why = "alpha = moving-rate / n needs a grid axis of static "
                        "size (or give option 'alpha')";
      if (decision.forced)
        return op->emitError() << kPass << ": marked gradcomm.policy = "
                               << "\"easgd\" but cannot be rewritten: " << why;
      reason = why;
      return ExchangeBuilder();
    }
    chosenAlpha = movingRate / static_cast<double>(groupSize);
  }
  if (!ShapedType::isDynamic(groupSize) && chosenAlpha * groupSize > 1.0)
    return op->emitError() << kPass << ": alpha " << formatNumber(chosenAlpha)
                           << " times the group size " << groupSize
                           << " (the center's moving rate) must be <= 1";
  const int64_t chosenPeriod = decision.overrides.period.value_or(period);
  const ExchangeMode chosenMode = mode;
  const CenterPlacement chosenCenter = center;
  auto grid = op.getGridAttr();
  auto axes = op.getGridAxesAttr();
  return ExchangeBuilder([=](OpBuilder &b, Location loc, Value updated,
                             StringRef parameter, SymbolTable &symbolTable) {
    OpBuilder declarationBuilder(b.getContext());
    // The center is f32 whatever the replica's type (bf16, f16).
    auto centerType =
        cast<RankedTensorType>(updated.getType()).clone(b.getF32Type());
    auto state =
        StateOp::create(declarationBuilder, loc,
                        sanitizeSymbolName((parameter + "_easgd").str()),
                        TypeAttr::get(centerType));
    insertDeclaration(symbolTable, state);
    auto average = ElasticAverageOp::create(
        b, loc, updated.getType(), updated,
        FlatSymbolRefAttr::get(state.getSymNameAttr()), grid, axes,
        b.getF64FloatAttr(chosenAlpha), b.getI64IntegerAttr(chosenPeriod),
        ExchangeModeAttr::get(b.getContext(), chosenMode),
        CenterPlacementAttr::get(b.getContext(), chosenCenter));
    std::string details =
        (", alpha = " + formatNumber(chosenAlpha) +
         ", period = " + std::to_string(chosenPeriod) +
         (chosenMode == ExchangeMode::Async ? ", mode = async" : "") +
         (chosenCenter == CenterPlacement::Sharded ? ", center = sharded"
                                                   : "") +
         ", center @" + state.getSymName())
            .str();
    return Exchange{average.getResult(), "elastically averaged", details};
  });
}

void EasgdRewritePass::runOnOperation() {
  if (failed(validateOptions()))
    return signalPassFailure();
  LocalStepRewrite rewrite{
      kPass, Policy::Easgd,
      // A bf16/f16 replica's differences travel in 16
      // bits (sync only); its center is f32.
      RewriteFilter{minElements, include, exclude,
                    /*halfGradients=*/mode == ExchangeMode::Sync},
      report,
      [&](shard::AllReduceOp op, const RewriteDecision &decision,
          int64_t groupSize, std::string &reason) {
        return plan(op, decision, groupSize, reason);
      }};
  if (failed(rewriteToLocalSteps(getOperation(), rewrite)))
    signalPassFailure();
}
