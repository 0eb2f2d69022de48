//===- OwnMemrefRuntime.cpp - Memref runtime calls to GradComm's symbols --===//
//
// Part of the GradComm project.
//
// finalize-memref-to-llvm (use-generic-functions) and memref.copy's
// lowering call MLIR's c_runner_utils names: _mlir_memref_to_llvm_alloc,
// _aligned_alloc, _free and memrefCopy. A process that loads both that
// library and the GradComm runtime binds them to whichever came first, so
// a compiled step could get host memory on the CUDA backend, or MLIR's
// code GradComm's device buffers. The runtime exports its own names
// instead, and this pass points lowered code at them.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_OWNMEMREFRUNTIMEPASS
#include "gradcomm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

/// MLIR's name -> the runtime's (runtime/include/gradcomm/runtime_memref.h).
constexpr std::pair<llvm::StringLiteral, llvm::StringLiteral> kRenamed[] = {
    {"_mlir_memref_to_llvm_alloc", "gradcomm_memref_alloc"},
    {"_mlir_memref_to_llvm_aligned_alloc", "gradcomm_memref_aligned_alloc"},
    {"_mlir_memref_to_llvm_free", "gradcomm_memref_free"},
    {"memrefCopy", "gradcomm_memref_copy"},
};

class OwnMemrefRuntimePass
    : public gradcomm::impl::OwnMemrefRuntimePassBase<OwnMemrefRuntimePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (const auto &[from, to] : kRenamed) {
      Operation *declaration = symbols.lookup(from);
      if (!declaration)
        continue;
      if (symbols.lookup(to)) {
        declaration->emitError()
            << "gradcomm-own-memref-runtime: the module already declares @"
            << to << " beside @" << from;
        return signalPassFailure();
      }
      if (failed(symbols.rename(declaration,
                                StringAttr::get(&getContext(), to)))) {
        declaration->emitError() << "gradcomm-own-memref-runtime: cannot "
                                    "rename @"
                                 << from << " to @" << to;
        return signalPassFailure();
      }
    }
  }
};

} // namespace
