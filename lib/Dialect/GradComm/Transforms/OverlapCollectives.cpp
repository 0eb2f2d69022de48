//===- OverlapCollectives.cpp - Start early, wait late
//---------------------===//
//
// Part of the GradComm project.
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_OVERLAPCOLLECTIVESPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kRuntimePrefix = "gradcomm_rt_";
constexpr llvm::StringLiteral kWait = "gradcomm_rt_wait_f32";

/// A blocking runtime call with a started form: which operand is the
/// buffer the call writes (what the wait must come before any use of).
struct StartedForm {
  llvm::StringLiteral blocking;
  llvm::StringLiteral started;
  unsigned writtenOperand;
};

const StartedForm kStartedForms[] = {
    {"gradcomm_rt_dense_all_reduce_f32",
     "gradcomm_rt_dense_all_reduce_start_f32", 1},
    {"gradcomm_rt_scalecom_f32", "gradcomm_rt_scalecom_start_f32", 2},
    {"gradcomm_rt_scalecom_recipe_f32", "gradcomm_rt_scalecom_recipe_start_f32",
     2},
    {"gradcomm_rt_gossip_exchange_f32", "gradcomm_rt_gossip_exchange_start_f32",
     1},
    {"gradcomm_rt_elastic_average_f32", "gradcomm_rt_elastic_average_start_f32",
     1},
};

const StartedForm *startedFormOf(func::CallOp call) {
  for (const StartedForm &form : kStartedForms)
    if (call.getCallee() == form.blocking)
      return &form;
  return nullptr;
}

/// The buffer `value` is a view of: through casts, subviews, reshapes and
/// every other view.
Value rootOf(Value value) {
  while (Operation *definition = value.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(definition)) {
      value = view.getViewSource();
      continue;
    }
    if (auto cast = dyn_cast<memref::CastOp>(definition)) {
      value = cast.getSource();
      continue;
    }
    break;
  }
  return value;
}

bool isAllocation(Value root) {
  return root.getDefiningOp<memref::AllocOp>() ||
         root.getDefiningOp<memref::AllocaOp>();
}

/// Conservative: an allocation of this function is apart from every other
/// buffer; buffers of other origins (arguments, call results) may be the
/// same memory.
bool mayAlias(Value a, Value b) {
  Value rootA = rootOf(a), rootB = rootOf(b);
  return rootA == rootB || (!isAllocation(rootA) && !isAllocation(rootB));
}

/// True when `op`, or an operation nested in it, may read or write
/// `buffer`, or is one the pass cannot see into (a call of anything but
/// the runtime).
bool touches(Operation *op, Value buffer) {
  WalkResult result = op->walk([&](Operation *nested) {
    if (auto call = dyn_cast<func::CallOp>(nested))
      if (!call.getCallee().starts_with(kRuntimePrefix))
        return WalkResult::interrupt();
    for (Value operand : nested->getOperands())
      if (isa<BaseMemRefType>(operand.getType()) && mayAlias(operand, buffer))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

class OverlapCollectivesPass
    : public gradcomm::impl::OverlapCollectivesPassBase<
          OverlapCollectivesPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (startedFormOf(call))
        calls.push_back(call);
    });
    for (func::CallOp call : calls)
      if (failed(overlap(module, call)))
        return signalPassFailure();
  }

private:
  /// The declaration `name` of `type` (with a C interface), created on
  /// first use; fails when the module defines it otherwise.
  FailureOr<func::FuncOp> declare(ModuleOp module, Location loc, StringRef name,
                                  FunctionType type) {
    if (Operation *existing = module.lookupSymbol(name)) {
      auto function = dyn_cast<func::FuncOp>(existing);
      if (!function || function.getFunctionType() != type)
        return existing->emitError()
               << "'" << name << "' is a GradComm runtime function of type "
               << type << "; the module defines it otherwise";
      return function;
    }
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    auto function = func::FuncOp::create(builder, loc, name, type);
    function.setPrivate();
    function->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                      builder.getUnitAttr());
    return function;
  }

  LogicalResult overlap(ModuleOp module, func::CallOp call) {
    const StartedForm &form = *startedFormOf(call);
    // The status goes to one handler call in the same block; anything else
    // is code this pass did not make: left as it is.
    if (call.getNumResults() != 1 || !call.getResult(0).hasOneUse())
      return success();
    auto handler =
        dyn_cast<func::CallOp>(*call.getResult(0).getUsers().begin());
    if (!handler || handler->getBlock() != call->getBlock() ||
        handler.getNumResults() != 0 ||
        call.getNumOperands() <= form.writtenOperand)
      return success();
    Location loc = call.getLoc();
    Value name = call.getOperand(0);
    Value written = call.getOperand(form.writtenOperand);

    FailureOr<func::FuncOp> start =
        declare(module, loc, form.started, call.getCalleeType());
    auto waitType = FunctionType::get(module.getContext(),
                                      {name.getType(), written.getType()},
                                      call.getResultTypes());
    FailureOr<func::FuncOp> wait = declare(module, loc, kWait, waitType);
    if (failed(start) || failed(wait))
      return failure();
    call.setCallee(start->getSymName());

    // The wait goes just before the first operation after the start that
    // touches the written buffer (or the block's terminator).
    Operation *before = handler->getNextNode();
    while (!before->hasTrait<OpTrait::IsTerminator>() &&
           !touches(before, written))
      before = before->getNextNode();
    OpBuilder builder(before);
    auto waited =
        func::CallOp::create(builder, loc, *wait, ValueRange{name, written});
    func::CallOp::create(builder, loc, handler.getCallee(), TypeRange(),
                         waited.getResults());
    return success();
  }
};

} // namespace
