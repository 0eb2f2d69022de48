//===- FinalizeKernels.cpp - Linkage and inlining of outlined kernels -----===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_FINALIZEKERNELSPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

class FinalizeKernelsPass
    : public gradcomm::impl::FinalizeKernelsPassBase<FinalizeKernelsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (!func->hasAttr(gradcomm::attr::kKernel))
        continue;
      func->removeAttr(gradcomm::attr::kKernel);
      func.setLinkage(LLVM::Linkage::Internal);
      // Internal linkage needs the default visibility.
      func->removeAttr(SymbolTable::getVisibilityAttrName());
      func.setNoInline(true);
    }
  }
};

} // namespace
