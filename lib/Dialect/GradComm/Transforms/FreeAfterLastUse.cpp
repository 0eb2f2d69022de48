//===- FreeAfterLastUse.cpp - Free step-local buffers after their last use ===//
//
// Part of the GradComm project.
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_FREEAFTERLASTUSEPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

/// The allocation `value` is (a view of), through view-like ops; null when
/// it comes from anything else.
memref::AllocOp rootAllocation(Value value) {
  while (true) {
    if (auto alloc = value.getDefiningOp<memref::AllocOp>())
      return alloc;
    auto view = value.getDefiningOp<ViewLikeOpInterface>();
    if (!view)
      return nullptr;
    value = view.getViewSource();
  }
}

/// Whether `user`, given `value` (the allocation or a view of it) as an
/// operand, may keep the buffer alive past itself or free it: see the pass
/// description. View-like uses are followed by the caller instead.
bool mayEscape(Operation *user, OpOperand &use) {
  if (llvm::any_of(user->getResultTypes(),
                   [](Type type) { return isa<BaseMemRefType>(type); }))
    return true;
  if (user->hasTrait<OpTrait::IsTerminator>())
    return true;
  if (isa<memref::DeallocOp, bufferization::DeallocOp>(user))
    return true;
  if (auto call = dyn_cast<func::CallOp>(user))
    return !call.getCallee().starts_with("gradcomm_rt_");
  if (isa<CallOpInterface>(user))
    return true;
  if (auto store = dyn_cast<memref::StoreOp>(user))
    return &use == &store.getValueMutable();
  return false;
}

/// The last operation of `block` that uses `alloc` or one of its views
/// (a use nested in an operation of the block counts as that operation),
/// or failure when some use may let the buffer escape or is outside the
/// block. `ignored` (the block-end dealloc) is not a use.
FailureOr<Operation *> lastUseInBlock(memref::AllocOp alloc, Block *block,
                                      Operation *ignored) {
  Operation *last = alloc;
  SmallVector<Value> worklist{alloc.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (user == ignored)
        continue;
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if (view && view.getViewSource() == value) {
        for (Value result : user->getResults())
          if (isa<BaseMemRefType>(result.getType()))
            worklist.push_back(result);
      } else if (mayEscape(user, use)) {
        return failure();
      }
      Operation *anchor = block->findAncestorOpInBlock(*user);
      if (!anchor)
        return failure();
      if (last->isBeforeInBlock(anchor))
        last = anchor;
    }
  }
  return last;
}

/// Rewrites `dealloc` (see the pass description): entries freed after
/// their last use, entries handed to the caller taken out with their
/// retained value.
void freeEarly(bufferization::DeallocOp dealloc) {
  Block *block = dealloc->getBlock();
  // How many retained values and entries come from each allocation.
  llvm::DenseMap<Operation *, unsigned> retainedRoots, entryRoots;
  for (Value retained : dealloc.getRetained()) {
    memref::AllocOp root = rootAllocation(retained);
    if (!root)
      return; // A retained value of unknown origin may alias any entry.
    ++retainedRoots[root];
  }
  bool entriesKnown = true;
  for (Value memref : dealloc.getMemrefs()) {
    if (memref::AllocOp root = rootAllocation(memref))
      ++entryRoots[root];
    else
      entriesKnown = false;
  }
  llvm::DenseSet<Value> retainedValues(dealloc.getRetained().begin(),
                                       dealloc.getRetained().end());

  SmallVector<Value> keptMemrefs, keptConditions;
  llvm::SmallPtrSet<Operation *, 16> freed;
  llvm::DenseMap<Value, Value> handedOver; // retained value -> condition
  for (auto [memref, condition] :
       llvm::zip_equal(dealloc.getMemrefs(), dealloc.getConditions())) {
    auto alloc = memref.getDefiningOp<memref::AllocOp>();
    if (alloc && freed.contains(alloc))
      continue; // A repeated entry: the buffer is freed once already.
    const bool unconditional =
        alloc && alloc->getBlock() == block && matchPattern(condition, m_One());
    if (unconditional && !retainedRoots.count(alloc)) {
      FailureOr<Operation *> last = lastUseInBlock(alloc, block, dealloc);
      if (succeeded(last) && (*last)->isBeforeInBlock(dealloc)) {
        OpBuilder builder(alloc.getContext());
        builder.setInsertionPointAfter(*last);
        memref::DeallocOp::create(builder, dealloc.getLoc(), memref);
        freed.insert(alloc);
        continue;
      }
    } else if (unconditional && entriesKnown && entryRoots[alloc] == 1 &&
               retainedRoots[alloc] == 1 && retainedValues.contains(memref)) {
      // Returned as it is, aliased by nothing else here: the caller owns
      // it, and its ownership result is its (true) condition.
      handedOver[memref] = condition;
      continue;
    }
    keptMemrefs.push_back(memref);
    keptConditions.push_back(condition);
  }
  if (freed.empty() && handedOver.empty())
    return;

  SmallVector<Value> keptRetained;
  for (Value retained : dealloc.getRetained())
    if (!handedOver.count(retained))
      keptRetained.push_back(retained);
  // Nothing left to free or to report: no op at all.
  bufferization::DeallocOp rewritten;
  if (!keptMemrefs.empty() || !keptRetained.empty()) {
    OpBuilder builder(dealloc);
    rewritten = bufferization::DeallocOp::create(
        builder, dealloc.getLoc(), keptMemrefs, keptConditions, keptRetained);
  }
  unsigned next = 0;
  for (auto [retained, result] :
       llvm::zip_equal(dealloc.getRetained(), dealloc.getUpdatedConditions())) {
    auto it = handedOver.find(retained);
    result.replaceAllUsesWith(it != handedOver.end()
                                  ? it->second
                                  : rewritten.getUpdatedConditions()[next++]);
  }
  dealloc.erase();
}

class FreeAfterLastUsePass
    : public gradcomm::impl::FreeAfterLastUsePassBase<FreeAfterLastUsePass> {
public:
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation().walk(
        [&](bufferization::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    for (bufferization::DeallocOp dealloc : deallocs)
      freeEarly(dealloc);
  }
};

} // namespace
