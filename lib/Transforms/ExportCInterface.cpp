//===- ExportCInterface.cpp - Give public functions a C interface ---------===//
//
// Part of the GradComm project.
//
// Marks every public function definition with `llvm.emit_c_interface`, so
// the LLVM lowering adds `_mlir_ciface_<name>`: the entry point trainers call
// with memref descriptors.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_EXPORTCINTERFACEPASS
#include "gradcomm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {
class ExportCInterfacePass
    : public gradcomm::impl::ExportCInterfacePassBase<ExportCInterfacePass> {
public:
  void runOnOperation() override {
    StringRef attrName = LLVM::LLVMDialect::getEmitCWrapperAttrName();
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        func->setAttr(attrName, UnitAttr::get(&getContext()));
  }
};
} // namespace
