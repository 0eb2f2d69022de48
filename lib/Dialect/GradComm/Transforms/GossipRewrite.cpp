//===- GossipRewrite.cpp - gradient all-reduce -> local step + gossip -----===//
//
// Part of the GradComm project.
//
// docs/design/architecture.md section 3. See the pass description in Passes.td
// and docs/gossip.md.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/Dialect/GradComm/Transforms/LocalStepRewrite.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_GOSSIPREWRITEPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

static constexpr llvm::StringLiteral kPass = "gradcomm-gossip";

namespace {

class GossipRewritePass
    : public gradcomm::impl::GossipRewritePassBase<GossipRewritePass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult validateOptions();
  /// The exchange for `op` (with its overrides), or failure (diagnosed).
  FailureOr<ExchangeBuilder> plan(shard::AllReduceOp op,
                                  const RewriteDecision &decision,
                                  int64_t groupSize);
};

} // namespace

LogicalResult GossipRewritePass::validateOptions() {
  ModuleOp module = getOperation();
  if (!(mixing > 0.0 && mixing < 1.0))
    return module.emitError() << kPass << ": option 'mixing' must be in (0, "
                              << "1), got " << formatNumber(mixing);
  if (period < 1)
    return module.emitError() << kPass << ": option 'period' must be >= 1, "
                              << "got " << int64_t(period);
  if (seed < 0)
    return module.emitError()
           << kPass << ": option 'seed' must be >= 0, got " << int64_t(seed);
  if (minElements < 0)
    return module.emitError() << kPass << ": option 'min-elements' must be "
                              << ">= 0, got " << int64_t(minElements);
  if (schedule == Schedule::Random && mode != ExchangeMode::Async)
    return module.emitError() << kPass << ": schedule 'random' is not a "
                              << "pairing: it needs mode=async";
  return success();
}

FailureOr<ExchangeBuilder>
GossipRewritePass::plan(shard::AllReduceOp op, const RewriteDecision &decision,
                        int64_t groupSize) {
  // Each override was range-checked by the dialect's attribute verifier.
  const PolicyOverrides &overrides = decision.overrides;
  Schedule chosenSchedule = overrides.schedule.value_or(schedule);
  double chosenMixing = overrides.mixing.value_or(mixing);
  int64_t chosenPeriod = overrides.period.value_or(period);
  if (chosenSchedule == Schedule::Random && mode != ExchangeMode::Async)
    return op->emitError() << kPass << ": schedule 'random' is not a "
                           << "pairing: it needs mode=async";
  if (chosenSchedule == Schedule::Hypercube &&
      !ShapedType::isDynamic(groupSize) && !llvm::isPowerOf2_64(groupSize))
    return op->emitError() << kPass << ": the hypercube schedule needs a "
                           << "power-of-two group, got " << groupSize;
  auto grid = op.getGridAttr();
  auto axes = op.getGridAxesAttr();
  int64_t sharedSeed = seed;
  ExchangeMode chosenMode = mode;
  return ExchangeBuilder([=](OpBuilder &b, Location loc, Value updated,
                             StringRef parameter, SymbolTable &symbolTable) {
    MLIRContext *ctx = b.getContext();
    OpBuilder declarationBuilder(ctx);
    auto state = StateOp::create(
        declarationBuilder, loc,
        sanitizeSymbolName((parameter + "_gossip").str()), TypeAttr());
    insertDeclaration(symbolTable, state);
    auto exchange = GossipExchangeOp::create(
        b, loc, updated.getType(), updated,
        FlatSymbolRefAttr::get(state.getSymNameAttr()), grid, axes,
        ScheduleAttr::get(ctx, chosenSchedule), b.getF64FloatAttr(chosenMixing),
        b.getI64IntegerAttr(sharedSeed), b.getI64IntegerAttr(chosenPeriod),
        ExchangeModeAttr::get(ctx, chosenMode));
    std::string details =
        (", schedule = " + stringifySchedule(chosenSchedule) +
         ", mixing = " + formatNumber(chosenMixing) +
         ", period = " + std::to_string(chosenPeriod) +
         (chosenMode == ExchangeMode::Async ? ", mode = async" : "") +
         ", state @" + state.getSymName())
            .str();
    return Exchange{exchange.getResult(), "gossiped", details};
  });
}

void GossipRewritePass::runOnOperation() {
  if (failed(validateOptions()))
    return signalPassFailure();
  LocalStepRewrite rewrite{
      kPass, Policy::Gossip,
      // A bf16/f16 replica is exchanged in its own 16 bits (sync only).
      RewriteFilter{minElements, include, exclude,
                    /*halfGradients=*/mode == ExchangeMode::Sync},
      report,
      [&](shard::AllReduceOp op, const RewriteDecision &decision,
          int64_t groupSize,
          std::string &) { return plan(op, decision, groupSize); }};
  if (failed(rewriteToLocalSteps(getOperation(), rewrite)))
    signalPassFailure();
}
