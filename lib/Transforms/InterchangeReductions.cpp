//===- InterchangeReductions.cpp - Vectorizable loop order for reductions -===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_INTERCHANGEREDUCTIONSPASS
#include "gradcomm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

/// Whether `expr` walks memory with unit step along loop `dim`: `dim`
/// itself or `dim + e` with `e` independent of it (a stride-1
/// convolution's window `oh + kh`).
bool unitStepAlong(AffineExpr expr, unsigned dim) {
  auto isDim = [&](AffineExpr e) {
    auto d = dyn_cast<AffineDimExpr>(e);
    return d && d.getPosition() == dim;
  };
  if (isDim(expr))
    return true;
  auto sum = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!sum || sum.getKind() != AffineExprKind::Add)
    return false;
  return (isDim(sum.getLHS()) && !sum.getRHS().isFunctionOfDim(dim)) ||
         (isDim(sum.getRHS()) && !sum.getLHS().isFunctionOfDim(dim));
}

/// Vector loops shorter than this gain nothing (a 3x3 kernel's width).
constexpr int64_t kMinInnermostExtent = 4;

/// Outputs updated side by side in the innermost loops give the CPU
/// independent accumulation chains to overlap (a scalar sum waits on its
/// previous addition every time).
constexpr int64_t kMinAccumulators = 4;
constexpr int64_t kMaxAccumulators = 16;
/// Reductions shorter than this are not worth reordering for.
constexpr int64_t kMinReductionTerms = 64;

/// When the output's last dimension is too short to vectorize (a 3x3
/// kernel's width in a convolution's weight gradient): its trailing
/// parallel dimensions whose extents multiply to 4..16, so that running
/// them innermost, below the reductions, updates that many outputs side by
/// side, each still summing its terms in the same order. Empty when there
/// are none or the reduction is short.
SmallVector<unsigned>
independentAccumulators(AffineMap output,
                        ArrayRef<utils::IteratorType> iterators,
                        ArrayRef<int64_t> ranges) {
  int64_t terms = 1;
  for (auto [dim, iterator] : llvm::enumerate(iterators))
    if (iterator == utils::IteratorType::reduction) {
      if (ShapedType::isDynamic(ranges[dim]))
        return {};
      terms *= ranges[dim];
    }
  if (terms < kMinReductionTerms)
    return {};
  SmallVector<unsigned> dims;
  int64_t outputs = 1;
  for (AffineExpr result : llvm::reverse(output.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(result);
    if (!dim || iterators[dim.getPosition()] != utils::IteratorType::parallel ||
        ShapedType::isDynamic(ranges[dim.getPosition()]) ||
        outputs * ranges[dim.getPosition()] > kMaxAccumulators)
      break;
    outputs *= ranges[dim.getPosition()];
    dims.insert(dims.begin(), dim.getPosition());
  }
  if (outputs < kMinAccumulators)
    return {};
  return dims;
}

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
  // (B of a matmul, a stride-1 convolution's input window); a row
  // reduction would trade contiguous reads for strided ones. And only when
  // that loop is long enough to vectorize.
  bool contiguousInput =
      llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
        AffineMap map = op.getMatchingIndexingMap(in);
        return map.getNumResults() > 0 &&
               unitStepAlong(map.getResults().back(), innermost);
      });
  if (!contiguousInput)
    return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> inner = {innermost};
  if (!ShapedType::isDynamic(ranges[innermost]) &&
      ranges[innermost] < kMinInnermostExtent) {
    inner = independentAccumulators(output, iterators, ranges);
    if (inner.empty())
      return {};
  }
  SmallVector<unsigned> order, reductions;
  for (unsigned dim = 0; dim < iterators.size(); ++dim) {
    if (llvm::is_contained(inner, dim))
      continue;
    if (iterators[dim] == utils::IteratorType::reduction)
      reductions.push_back(dim);
    else
      order.push_back(dim);
  }
  llvm::append_range(order, reductions);
  llvm::append_range(order, inner);
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
