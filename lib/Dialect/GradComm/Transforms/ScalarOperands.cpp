//===- ScalarOperands.cpp - Rank-0 linalg inputs read once as scalars ----===//
//
// Part of the GradComm project.
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_SCALAROPERANDSPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

bool isRankZeroTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() == 0;
}

class ScalarOperandsPass
    : public gradcomm::impl::ScalarOperandsPassBase<ScalarOperandsPass> {
public:
  void runOnOperation() override {
    scalars.clear();
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics() &&
          llvm::any_of(op.getDpsInputs(), isRankZeroTensor))
        generics.push_back(op);
    });
    for (linalg::GenericOp op : generics)
      rewrite(op);
  }

private:
  /// One tensor.extract per rank-0 tensor, right after its definition, so
  /// it dominates every reader.
  Value scalarOf(Value tensor) {
    auto [it, inserted] = scalars.try_emplace(tensor);
    if (!inserted)
      return it->second;
    OpBuilder builder(tensor.getContext());
    if (Operation *producer = tensor.getDefiningOp())
      builder.setInsertionPointAfter(producer);
    else
      builder.setInsertionPointToStart(cast<BlockArgument>(tensor).getOwner());
    it->second = tensor::ExtractOp::create(builder, tensor.getLoc(), tensor,
                                           ValueRange{});
    return it->second;
  }

  /// `op` without its rank-0 inputs: their block arguments become the
  /// scalars.
  void rewrite(linalg::GenericOp op) {
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<std::pair<unsigned, Value>> replaced; // argument, scalar
    for (OpOperand *input : op.getDpsInputOperands()) {
      if (isRankZeroTensor(input->get())) {
        replaced.push_back({input->getOperandNumber(), scalarOf(input->get())});
        continue;
      }
      inputs.push_back(input->get());
      maps.push_back(op.getMatchingIndexingMap(input));
    }
    for (OpOperand &output : op.getDpsInitsMutable())
      maps.push_back(op.getMatchingIndexingMap(&output));

    OpBuilder builder(op);
    auto next = linalg::GenericOp::create(
        builder, op.getLoc(), op.getResultTypes(), inputs, op.getOutputs(),
        builder.getAffineMapArrayAttr(maps), op.getIteratorTypes(),
        op.getDocAttr(), op.getLibraryCallAttr());
    next->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    next.getRegion().takeBody(op.getRegion());
    Block &body = next.getRegion().front();
    // Block arguments follow the operands; erase from the back so the
    // earlier positions stay valid.
    for (auto [position, scalar] : llvm::reverse(replaced)) {
      body.getArgument(position).replaceAllUsesWith(scalar);
      body.eraseArgument(position);
    }
    op->replaceAllUsesWith(next->getResults());
    op->erase();
  }

  llvm::DenseMap<Value, Value> scalars;
};

} // namespace
