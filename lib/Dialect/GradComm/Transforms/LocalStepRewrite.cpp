//===- LocalStepRewrite.cpp - Local step + parameter exchange -------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/Transforms/LocalStepRewrite.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::gradcomm;

LogicalResult
mlir::gradcomm::rewriteToLocalSteps(ModuleOp module,
                                    const LocalStepRewrite &rewrite) {
  SmallVector<shard::AllReduceOp> allReduces;
  module.walk([&](shard::AllReduceOp op) { allReduces.push_back(op); });
  SymbolTable symbolTable(module);
  // One exchange per returned parameter, even if several gradients feed it.
  llvm::DenseSet<OpOperand *> exchanged;
  bool failedAny = false;
  for (shard::AllReduceOp op : allReduces) {
    FailureOr<RewriteDecision> decision =
        decideRewrite(op, rewrite.policy, rewrite.filter, rewrite.passName);
    if (failed(decision)) {
      failedAny = true;
      continue;
    }
    auto leaveDense = [&](StringRef reason) {
      if (rewrite.report)
        op->emitRemark() << rewrite.passName << ": left dense: " << reason;
    };
    if (!decision->rewrite) {
      leaveDense(decision->reason);
      continue;
    }
    const int64_t groupSize = reducedGroupSize(op);
    const bool isSum = op.getReduction() == shard::ReductionKind::Sum;
    if (isSum && ShapedType::isDynamic(groupSize)) {
      const char *why = "a sum over a grid axis of dynamic size has no static "
                        "local estimate n * g";
      if (decision->forced) {
        op->emitError() << rewrite.passName << ": marked gradcomm.policy = \""
                        << stringifyPolicy(rewrite.policy)
                        << "\" but cannot be rewritten: " << why;
        failedAny = true;
      } else {
        leaveDense(why);
      }
      continue;
    }
    std::string reason;
    FailureOr<ExchangeBuilder> exchange =
        rewrite.plan(op, *decision, groupSize, reason);
    if (failed(exchange)) {
      failedAny = true;
      continue;
    }
    if (!*exchange) {
      leaveDense(reason);
      continue;
    }

    // The unbiased local estimate of the reduced gradient.
    OpBuilder b(op);
    Value local = op.getInput();
    const int64_t scale = isSum ? groupSize : 1;
    if (scale != 1) {
      auto type = cast<RankedTensorType>(local.getType());
      Value n = arith::ConstantOp::create(
          b, op.getLoc(),
          DenseElementsAttr::get(type, b.getF32FloatAttr(scale)));
      local = arith::MulFOp::create(b, op.getLoc(), local, n);
    }
    op.getResult().replaceAllUsesWith(local);

    OpOperand *update = decision->use.update;
    std::string name = parameterName(decision->use.parameter);
    if (exchanged.insert(update).second) {
      OpBuilder atReturn(update->getOwner());
      Exchange made =
          (*exchange)(atReturn, op.getLoc(), update->get(), name, symbolTable);
      update->set(made.value);
      if (rewrite.report)
        op->emitRemark() << rewrite.passName << ": " << made.verb
                         << " parameter '" << name << "': local gradient"
                         << (scale > 1 ? " * " + std::to_string(scale)
                                       : std::string())
                         << made.details;
    } else if (rewrite.report) {
      op->emitRemark() << rewrite.passName << ": local gradient for parameter '"
                       << name << "', already exchanged";
    }
    op.erase();
  }
  return failure(failedAny);
}
