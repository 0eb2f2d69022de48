//===- VerifyShardings.cpp - Refuse shardings upstream cannot partition ---===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_VERIFYSHARDINGSPASS
#include "gradcomm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

class VerifyShardingsPass
    : public gradcomm::impl::VerifyShardingsPassBase<VerifyShardingsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (propagated) {
      checkEveryTensorIsSharded();
      return;
    }
    // The annotations for users of each value, in program order.
    llvm::MapVector<Value, SmallVector<shard::ShardOp>> forUsers;
    getOperation().walk([&](shard::ShardOp op) {
      if (op.getAnnotateForUsers())
        forUsers[op.getSrc()].push_back(op);
    });
    bool failed = false;
    for (auto &[value, annotations] : forUsers) {
      shard::Sharding first(annotations.front().getSharding());
      for (shard::ShardOp other : llvm::drop_begin(annotations)) {
        if (shard::Sharding(other.getSharding()) == first)
          continue;
        InFlightDiagnostic diagnostic =
            other.emitError()
            << "gradcomm: this value is annotated for its users with two "
               "different shardings; upstream shard-partition (MLIR 22.1) "
               "crashes on such input, so it is refused: annotate the value "
               "once, or give each user its own copy of the value";
        diagnostic.attachNote(annotations.front().getLoc())
            << "the other annotation";
        failed = true;
      }
    }
    if (failed)
      signalPassFailure();
  }

private:
  /// After sharding-propagation: upstream shard-partition dereferences the
  /// sharding of every tensor an op produces, and crashes on a tensor that
  /// propagation left without one (a value that depends on no annotated
  /// value, e.g. a returned tensor.empty).
  void checkEveryTensorIsSharded() {
    bool failed = false;
    getOperation().walk([&](FunctionOpInterface func) {
      bool annotated = false;
      func.walk([&](shard::ShardOp) {
        annotated = true;
        return WalkResult::interrupt();
      });
      if (!annotated)
        return;
      func.walk([&](Operation *op) {
        if (isa<shard::ShardDialect>(op->getDialect()))
          return;
        for (OpResult result : op->getResults()) {
          if (!isa<RankedTensorType>(result.getType()) || isSharded(result))
            continue;
          op->emitError()
              << "gradcomm: result #" << result.getResultNumber()
              << " has no sharding after sharding-propagation (it depends on "
                 "no annotated value); upstream shard-partition (MLIR 22.1) "
                 "crashes on such input, so it is refused: annotate it, e.g. "
                 "`shard.shard` with split_axes = [[]] for a replicated value";
          failed = true;
        }
      });
    });
    if (failed)
      signalPassFailure();
  }

  static bool isSharded(Value value) {
    return llvm::any_of(value.getUsers(), [&](Operation *user) {
      auto shardOp = dyn_cast<shard::ShardOp>(user);
      return shardOp && shardOp.getSrc() == value &&
             !shardOp.getAnnotateForUsers();
    });
  }
};

} // namespace
