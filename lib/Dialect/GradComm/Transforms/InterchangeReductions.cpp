//===- InterchangeReductions.cpp - Vectorizable loop order for reductions -===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_INTERCHANGEREDUCTIONSPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

/// The loop order that puts the reductions of `op` just outside the
/// output's last dimension, or empty when there is nothing to do.
SmallVector<unsigned> vectorizableOrder(linalg::GenericOp op) {
  if (op.getNumReductionLoops() == 0 || op.getNumDpsInits() != 1)
    return {};
  AffineMap output = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (output.getNumResults() == 0)
    return {};
  auto last = dyn_cast<AffineDimExpr>(output.getResults().back());
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (!last || iterators[last.getPosition()] != utils::IteratorType::parallel)
    return {};
  unsigned innermost = last.getPosition();
  // Worth it only when an input is contiguous along that dimension too
  // (B of a matmul); a row reduction would trade contiguous reads for
  // strided ones.
  bool contiguousInput =
      llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
        AffineMap map = op.getMatchingIndexingMap(in);
        return map.getNumResults() > 0 &&
               map.getResults().back() == output.getResults().back();
      });
  if (!contiguousInput)
    return {};
  SmallVector<unsigned> order, reductions;
  for (unsigned dim = 0; dim < iterators.size(); ++dim) {
    if (dim == innermost)
      continue;
    if (iterators[dim] == utils::IteratorType::reduction)
      reductions.push_back(dim);
    else
      order.push_back(dim);
  }
  llvm::append_range(order, reductions);
  order.push_back(innermost);
  for (unsigned i = 0; i < order.size(); ++i)
    if (order[i] != i)
      return order;
  return {};
}

class InterchangeReductionsPass
    : public gradcomm::impl::InterchangeReductionsPassBase<
          InterchangeReductionsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : ops) {
      SmallVector<unsigned> order = vectorizableOrder(op);
      if (order.empty())
        continue;
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order)))
        return signalPassFailure();
    }
  }
};

} // namespace
