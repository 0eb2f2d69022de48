//===- GossipRewrite.cpp - gradient all-reduce -> local step + gossip -----===//
//
// Part of the GradComm project.
//
// docs/design/architecture.md section 3. See the pass description in Passes.td
// and docs/gossip.md.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/Dialect/GradComm/Transforms/GradientAnalysis.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_GOSSIPREWRITEPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

static constexpr llvm::StringLiteral kPass = "gradcomm-gossip";

namespace {

/// The exchange parameters resolved for one parameter.
struct GossipPlan {
  Schedule schedule = Schedule::Matching;
  double mixing = 0.5;
  int64_t period = 1;
  /// n of the local estimate n * g of a `sum` (1 for an `average`).
  int64_t sumScale = 1;
};

class GossipRewritePass
    : public gradcomm::impl::GossipRewritePassBase<GossipRewritePass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult validateOptions();
  /// Gossip plan for `op`, a reason to stay dense, or failure (diagnosed).
  FailureOr<std::optional<GossipPlan>>
  decide(shard::AllReduceOp op, GradientUse &use, std::string &reason);
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
  return success();
}

FailureOr<std::optional<GossipPlan>>
GossipRewritePass::decide(shard::AllReduceOp op, GradientUse &use,
                          std::string &reason) {
  RewriteFilter filter{minElements, include, exclude};
  FailureOr<RewriteDecision> shared =
      decideRewrite(op, Policy::Gossip, filter, kPass);
  if (failed(shared))
    return failure();
  use = shared->use;
  if (!shared->rewrite) {
    reason = shared->reason;
    return std::optional<GossipPlan>();
  }
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  const int64_t groupSize =
      grid ? grid.getShape()[op.getGridAxes()[0]] : ShapedType::kDynamic;
  const bool isSum = op.getReduction() == shard::ReductionKind::Sum;
  if (isSum && ShapedType::isDynamic(groupSize)) {
    const char *why = "a sum over a grid axis of dynamic size has no static "
                      "local estimate n * g";
    if (shared->forced)
      return op->emitError() << kPass << ": marked gradcomm.policy = "
                             << "\"gossip\" but cannot be rewritten: " << why;
    reason = why;
    return std::optional<GossipPlan>();
  }

  // Each override was range-checked by the dialect's attribute verifier.
  const PolicyOverrides &overrides = shared->overrides;
  GossipPlan plan;
  plan.sumScale = isSum ? groupSize : 1;
  plan.schedule = overrides.schedule.value_or(schedule);
  plan.mixing = overrides.mixing.value_or(mixing);
  plan.period = overrides.period.value_or(period);
  if (plan.schedule == Schedule::Hypercube &&
      !ShapedType::isDynamic(groupSize) && !llvm::isPowerOf2_64(groupSize))
    return op->emitError() << kPass << ": the hypercube schedule needs a "
                           << "power-of-two group, got " << groupSize;
  return std::optional<GossipPlan>(plan);
}

void GossipRewritePass::runOnOperation() {
  if (failed(validateOptions()))
    return signalPassFailure();
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  SmallVector<shard::AllReduceOp> allReduces;
  module.walk([&](shard::AllReduceOp op) { allReduces.push_back(op); });

  SymbolTable symbolTable(module);
  // One exchange per returned parameter, even if several gradients feed it.
  llvm::DenseSet<OpOperand *> exchanged;
  bool failedAny = false;
  for (shard::AllReduceOp op : allReduces) {
    GradientUse use;
    std::string reason;
    FailureOr<std::optional<GossipPlan>> plan = decide(op, use, reason);
    if (failed(plan)) {
      failedAny = true;
      continue;
    }
    if (!*plan) {
      if (report)
        op->emitRemark() << kPass << ": left dense: " << reason;
      continue;
    }

    // The unbiased local estimate of the reduced gradient.
    OpBuilder b(op);
    Value local = op.getInput();
    const int64_t groupSize = (*plan)->sumScale;
    if (groupSize != 1) {
      auto type = cast<RankedTensorType>(local.getType());
      Value n = arith::ConstantOp::create(
          b, op.getLoc(),
          DenseElementsAttr::get(type, b.getF32FloatAttr(groupSize)));
      local = arith::MulFOp::create(b, op.getLoc(), local, n);
    }
    op.getResult().replaceAllUsesWith(local);

    OpOperand *update = use.update;
    std::string name = parameterName(use.parameter);
    if (exchanged.insert(update).second) {
      OpBuilder declarationBuilder(ctx);
      auto state =
          StateOp::create(declarationBuilder, op.getLoc(),
                          sanitizeSymbolName(name + "_gossip"), TypeAttr());
      insertDeclaration(symbolTable, state);
      OpBuilder atReturn(update->getOwner());
      auto exchange = GossipExchangeOp::create(
          atReturn, op.getLoc(), update->get().getType(), update->get(),
          FlatSymbolRefAttr::get(state.getSymNameAttr()), op.getGridAttr(),
          op.getGridAxesAttr(), ScheduleAttr::get(ctx, (*plan)->schedule),
          atReturn.getF64FloatAttr((*plan)->mixing),
          atReturn.getI64IntegerAttr(seed),
          atReturn.getI64IntegerAttr((*plan)->period));
      update->set(exchange.getResult());
      if (report)
        op->emitRemark() << kPass << ": gossiped parameter '" << name
                         << "': local gradient"
                         << (groupSize > 1 ? " * " + std::to_string(groupSize)
                                           : std::string())
                         << ", schedule = "
                         << stringifySchedule((*plan)->schedule)
                         << ", mixing = " << formatNumber((*plan)->mixing)
                         << ", period = " << (*plan)->period << ", state @"
                         << state.getSymName();
    } else if (report) {
      op->emitRemark() << kPass << ": local gradient for parameter '" << name
                       << "', already exchanged";
    }
    op.erase();
  }
  if (failedAny)
    signalPassFailure();
}
