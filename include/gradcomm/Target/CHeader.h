//===- CHeader.h - C header of a compiled step's entry points --*- C++ -*-===//
//
// Part of the GradComm project.
//
// Declares `_mlir_ciface_<name>` for every public function of a module at
// memref level (after bufferization: the signatures a trainer calls), with
// the memref descriptor structs they take. gradcomm-compile --emit-header
// and `gradcomm-translate --gradcomm-emit-c-header` both use it.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_TARGET_CHEADER_H
#define GRADCOMM_TARGET_CHEADER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::gradcomm {

/// Writes the C header of `module`'s public functions to `os`. `source`
/// names the input in the header's banner. Fails with a diagnostic at the
/// function when a signature has a type C cannot express.
LogicalResult emitCHeader(ModuleOp module, llvm::raw_ostream &os,
                          llvm::StringRef source);

/// Registers the `gradcomm-emit-c-header` translation.
void registerToCHeaderTranslation();

} // namespace mlir::gradcomm

#endif // GRADCOMM_TARGET_CHEADER_H
