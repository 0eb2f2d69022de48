//===- GuardFailedSteps.cpp - No writes after a failed runtime call -------===//
//
// Part of the GradComm project.
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_GUARDFAILEDSTEPSPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kRecord = "gradcomm_rt_record";
constexpr llvm::StringLiteral kStepOk = "gradcomm_rt_step_ok";

bool isCallTo(Operation *op, StringRef callee) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee() == callee;
}

/// A write a failed step must not make: no results (so nothing after it
/// needs a value from it) and possibly writing memory.
bool isGuardable(Operation &op) {
  if (op.getNumResults() != 0 || op.hasTrait<OpTrait::IsTerminator>())
    return false;
  if (isCallTo(&op, kRecord))
    return false;
  return !isMemoryEffectFree(&op);
}

class GuardFailedStepsPass
    : public gradcomm::impl::GuardFailedStepsPassBase<GuardFailedStepsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && llvm::hasSingleElement(func.getBody()) &&
          llvm::any_of(func.getBody().front(),
                       [](Operation &op) { return isCallTo(&op, kRecord); }))
        steps.push_back(func);
    if (steps.empty())
      return;
    func::FuncOp stepOk = declareStepOk(module);
    if (!stepOk)
      return signalPassFailure();
    for (func::FuncOp step : steps)
      guard(step, stepOk);
  }

private:
  func::FuncOp declareStepOk(ModuleOp module) {
    Builder b(module.getContext());
    FunctionType type = b.getFunctionType({}, {b.getI32Type()});
    if (Operation *existing = module.lookupSymbol(kStepOk)) {
      auto func = dyn_cast<func::FuncOp>(existing);
      if (!func || func.getFunctionType() != type) {
        existing->emitError()
            << "'" << kStepOk << "' is a GradComm runtime function of type "
            << type << "; the module defines it otherwise";
        return nullptr;
      }
      return func;
    }
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    auto func = func::FuncOp::create(builder, module.getLoc(), kStepOk, type);
    func.setPrivate();
    return func;
  }

  /// Wraps each run of guardable ops after the first recorded status.
  void guard(func::FuncOp step, func::FuncOp stepOk) {
    Block &body = step.getBody().front();
    SmallVector<SmallVector<Operation *>> runs;
    bool afterFirstCall = false;
    SmallVector<Operation *> run;
    auto endRun = [&] {
      if (!run.empty())
        runs.push_back(std::move(run));
      run.clear();
    };
    for (Operation &op : body) {
      if (isCallTo(&op, kRecord)) {
        afterFirstCall = true;
        endRun();
        continue;
      }
      if (afterFirstCall && isGuardable(op))
        run.push_back(&op);
      else
        endRun();
    }
    endRun();
    OpBuilder builder(step.getContext());
    for (ArrayRef<Operation *> ops : runs) {
      Location loc = ops.front()->getLoc();
      builder.setInsertionPoint(ops.front());
      Value ok = func::CallOp::create(builder, loc, stepOk).getResult(0);
      Value zero = arith::ConstantIntOp::create(builder, loc, 0, 32);
      Value go = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ne,
                                       ok, zero);
      auto guardOp = scf::IfOp::create(builder, loc, TypeRange(), go,
                                       /*withElseRegion=*/false);
      guardOp->setAttr(gradcomm::attr::kStepGuard, builder.getUnitAttr());
      Block *then = &guardOp.getThenRegion().front();
      for (Operation *op : ops)
        op->moveBefore(then->getTerminator());
    }
  }
};

} // namespace
