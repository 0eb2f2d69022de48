//===- NameCollectives.cpp - Stamp runtime names on collectives -----------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/Dialect/GradComm/Transforms/GradientAnalysis.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_NAMECOLLECTIVESPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

namespace {

class NameCollectivesPass
    : public gradcomm::impl::NameCollectivesPassBase<NameCollectivesPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(&getContext());
    // Names already stamped (by a rewrite pass or the user) keep theirs;
    // new names avoid them.
    llvm::StringSet<> taken;
    module.walk([&](Operation *op) {
      if (auto name = op->getAttrOfType<StringAttr>(attr::kRuntimeName))
        taken.insert(name.getValue());
    });
    auto unique = [&](std::string name) {
      std::string candidate = name;
      for (int suffix = 1; !taken.insert(candidate).second; ++suffix)
        candidate = name + "_" + std::to_string(suffix);
      return candidate;
    };

    int64_t index = 0;
    module.walk([&](Operation *op) {
      std::string name;
      if (isa<shard::AllReduceOp, shard::ReduceScatterOp>(op)) {
        name = collectiveName(op, analyzeGradient(op->getResult(0)).parameter,
                              index++);
      } else if (isa<SparseAllReduceOp, SparseReduceScatterOp>(op)) {
        auto compress = op->getOperand(0).getDefiningOp<CltkCompressOp>();
        name = compress ? (compress.getState() + "_reduce").str()
                        : collectiveName(op, nullptr, index++);
      } else {
        return;
      }
      if (!op->hasAttr(attr::kRuntimeName))
        op->setAttr(attr::kRuntimeName, builder.getStringAttr(unique(name)));
    });
  }
};

} // namespace
