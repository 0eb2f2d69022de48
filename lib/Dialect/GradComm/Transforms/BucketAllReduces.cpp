//===- BucketAllReduces.cpp - Fuse small all-reduces into buckets ---------===//
//
// Part of the GradComm project.
//
// Every runtime call pays a collective's latency and the agreement (an
// all-reduce of its own) whatever its size, so a model with many small
// tensors (biases, norms) spends its communication time in latency. This
// pass fuses neighbouring dense all-reduces of one kind into one call on a
// flat buffer, as PyTorch DDP's gradient buckets do, but at compile time:
// the compiler sees every all-reduce of the step.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_BUCKETALLREDUCESPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

namespace {

/// Can `op` join a bucket: a statically shaped all-reduce whose result type
/// is its input's, with no `gradcomm.*` setting of its own (a user's
/// override asks for that op alone).
bool isBucketable(shard::AllReduceOp op, int64_t limit) {
  auto type = dyn_cast<RankedTensorType>(op.getInput().getType());
  if (!type || !type.hasStaticShape() || type != op.getResult().getType() ||
      type.getNumElements() > limit)
    return false;
  return llvm::none_of(op->getAttrs(), [](NamedAttribute attribute) {
    return attribute.getName().getValue().starts_with("gradcomm.");
  });
}

/// Ops that may share one call: the same grid, axes, reduction and
/// element type.
bool sameKind(shard::AllReduceOp a, shard::AllReduceOp b) {
  return a.getGridAttr() == b.getGridAttr() &&
         a.getGridAxes() == b.getGridAxes() &&
         a.getReduction() == b.getReduction() &&
         getElementTypeOrSelf(a.getInput().getType()) ==
             getElementTypeOrSelf(b.getInput().getType());
}

/// Does `op` (or an op nested in it) use a value in `values`?
bool usesAny(Operation *op, const llvm::DenseSet<Value> &values) {
  WalkResult walk = op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      if (values.contains(operand))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return walk.wasInterrupted();
}

/// `value` (a static tensor) as a 1-D tensor, and back.
Value flatten(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  auto flat =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  if (type.getRank() == 1)
    return value;
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flat, value,
                                         ArrayRef<ReassociationIndices>{});
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::CollapseShapeOp::create(b, loc, flat, value,
                                         ArrayRef<ReassociationIndices>{all});
}

Value unflatten(OpBuilder &b, Location loc, Value flat, RankedTensorType type) {
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::ExpandShapeOp::create(b, loc, type, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// Offsets, sizes and strides of the 1-D slice [offset, offset + size).
struct Range {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
Range range(OpBuilder &b, int64_t offset, int64_t size) {
  return {
      {b.getIndexAttr(offset)}, {b.getIndexAttr(size)}, {b.getIndexAttr(1)}};
}

Value insertSlice(OpBuilder &b, Location loc, Value source, Value dest,
                  const Range &r) {
  return tensor::InsertSliceOp::create(b, loc, source, dest, r.offsets, r.sizes,
                                       r.strides);
}

class BucketAllReducesPass
    : public gradcomm::impl::BucketAllReducesPassBase<BucketAllReducesPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (bucketElements < 1) {
      getOperation().emitError()
          << "gradcomm-bucket-all-reduces: option 'bucket-elements' must be "
             ">= 1, got "
          << int64_t(bucketElements);
      return signalPassFailure();
    }
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      bucketBlock(*block);
  }

private:
  /// The open bucket: its members, and the ops after its first member that
  /// depend on a member's result (they move below the fused call).
  struct Bucket {
    SmallVector<shard::AllReduceOp> members;
    SmallVector<Operation *> dependents;
    llvm::DenseSet<Value> tainted; // members' and dependents' results
    int64_t elements = 0;
    /// A dependent with side effects: it cannot move, so no later
    /// all-reduce may join.
    bool pinned = false;
  };

  /// Greedy, in program order: an all-reduce joins the open bucket when it
  /// is of the same kind, fits, and its input does not depend on a
  /// member's result. Ops in between that use a member's result (a
  /// parameter update) move below the fused call, which sits where the
  /// last member was; one with side effects pins the bucket instead.
  void bucketBlock(Block &block) {
    Bucket open;
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *op : ops) {
      auto allReduce = dyn_cast<shard::AllReduceOp>(op);
      const bool dependent = !open.members.empty() && usesAny(op, open.tainted);
      if (allReduce && isBucketable(allReduce, bucketElements)) {
        const int64_t elements =
            cast<RankedTensorType>(allReduce.getInput().getType())
                .getNumElements();
        // A new bucket when this one cannot take it; a dependent input
        // (it needs a member's result) ends this bucket first.
        if (!open.members.empty() &&
            (dependent || open.pinned ||
             !sameKind(open.members.front(), allReduce) ||
             open.elements + elements > bucketElements)) {
          close(open);
          open = Bucket();
        }
        open.members.push_back(allReduce);
        open.tainted.insert(allReduce.getResult());
        open.elements += elements;
        continue;
      }
      if (!dependent)
        continue;
      if (!isMemoryEffectFree(op) || op->hasTrait<OpTrait::IsTerminator>())
        open.pinned = true;
      else
        open.dependents.push_back(op);
      for (Value result : op->getResults())
        open.tainted.insert(result);
    }
    close(open);
  }

  /// One all-reduce of the members' flattened inputs, placed at the last
  /// member; each member's result becomes its slice of it.
  void close(const Bucket &bucket) {
    ArrayRef<shard::AllReduceOp> members = bucket.members;
    if (members.size() < 2)
      return;
    shard::AllReduceOp last = members.back();
    Location loc = last.getLoc();
    OpBuilder b(last);
    Type elementType = getElementTypeOrSelf(last.getInput().getType());
    int64_t total = 0;
    for (shard::AllReduceOp member : members)
      total +=
          cast<RankedTensorType>(member.getInput().getType()).getNumElements();
    auto flatType = RankedTensorType::get({total}, elementType);
    Value buffer =
        tensor::EmptyOp::create(b, loc, flatType.getShape(), elementType);
    int64_t offset = 0;
    for (shard::AllReduceOp member : members) {
      Value flat = flatten(b, loc, member.getInput());
      int64_t size = cast<RankedTensorType>(flat.getType()).getNumElements();
      buffer = insertSlice(b, loc, flat, buffer, range(b, offset, size));
      offset += size;
    }
    auto fused = shard::AllReduceOp::create(
        b, loc, flatType, last.getGridAttr(), last.getGridAxesAttr(), buffer,
        last.getReductionAttr());
    // Dense, whatever rewrite runs after: its slices are no gradient.
    fused->setAttr(attr::kPolicy, b.getStringAttr("dense"));
    offset = 0;
    for (shard::AllReduceOp member : members) {
      auto type = cast<RankedTensorType>(member.getResult().getType());
      Range r = range(b, offset, type.getNumElements());
      Value slice = tensor::ExtractSliceOp::create(
          b, loc, fused.getResult(), r.offsets, r.sizes, r.strides);
      offset += type.getNumElements();
      member.getResult().replaceAllUsesWith(unflatten(b, loc, slice, type));
    }
    if (report)
      fused->emitRemark() << "gradcomm-bucket-all-reduces: " << members.size()
                          << " all-reduces, " << total
                          << " elements, in one call";
    // The members' users that came before the last member, below the
    // slices, in their order.
    Operation *anchor = b.getInsertionPoint() == b.getBlock()->end()
                            ? nullptr
                            : &*std::prev(b.getInsertionPoint());
    for (Operation *op : bucket.dependents) {
      if (!op->isBeforeInBlock(last))
        continue;
      op->moveAfter(anchor);
      anchor = op;
    }
    for (shard::AllReduceOp member : members)
      member.erase();
  }
};

} // namespace
