//===- DropInPlaceResults.cpp - Drop results that alias arguments ---------===//
//
// Part of the GradComm project.
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_DROPINPLACERESULTSPASS
#include "gradcomm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

/// The function argument `value` is, looking through memref casts.
BlockArgument asArgument(Value value, func::FuncOp func) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  auto arg = dyn_cast<BlockArgument>(value);
  return arg && arg.getOwner() == &func.getBody().front() ? arg : nullptr;
}

class DropInPlaceResultsPass
    : public gradcomm::impl::DropInPlaceResultsPassBase<
          DropInPlaceResultsPass> {
public:
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic() ||
          !llvm::hasSingleElement(func.getBody()))
        continue;
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      llvm::BitVector drop(ret.getNumOperands());
      SmallVector<Value> kept;
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        if (isa<BaseMemRefType>(value.getType()) && asArgument(value, func))
          drop.set(i);
        else
          kept.push_back(value);
      }
      if (drop.none())
        continue;
      OpBuilder builder(ret);
      func::ReturnOp::create(builder, ret.getLoc(), kept);
      ret.erase();
      if (failed(func.eraseResults(drop)))
        return signalPassFailure();
    }
  }
};

} // namespace
