//===- HoistCollectives.cpp - Start collectives where their input is ready ===//
//
// Part of the GradComm project.
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_HOISTCOLLECTIVESPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

/// The ops that become started runtime calls under
/// gradcomm-overlap-collectives: a dense all-reduce, a ScaleCom compress
/// (the fused step is emitted where it stands).
bool isHoistable(Operation *op) {
  return isa<shard::AllReduceOp, gradcomm::CltkCompressOp>(op);
}

bool definesOperandOf(Operation *definer, Operation *user) {
  for (Value operand : user->getOperands())
    if (operand.getDefiningOp() == definer)
      return true;
  return false;
}

class HoistCollectivesPass
    : public gradcomm::impl::HoistCollectivesPassBase<HoistCollectivesPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> collectives;
    getOperation().walk([&](Operation *op) {
      if (isHoistable(op))
        collectives.push_back(op);
    });
    for (Operation *op : collectives) {
      // Up past every operation without memory effects that does not
      // compute its operands: the computation that stays below runs while
      // the collective is in flight.
      Operation *above = op;
      while (Operation *previous = above->getPrevNode()) {
        if (!isMemoryEffectFree(previous) || definesOperandOf(previous, op))
          break;
        above = previous;
      }
      if (above != op)
        op->moveBefore(above);
    }
  }
};

} // namespace
