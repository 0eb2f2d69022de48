//===- gradcomm-translate.cpp - GradComm translations ---------------------===//
//
// Part of the GradComm project.
//
// mlir-translate with GradComm's translations registered (the C header of a
// compiled step's entry points) beside upstream's MLIR -> LLVM IR.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Target/CHeader.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

namespace mlir {
void registerToLLVMIRTranslation();
} // namespace mlir

int main(int argc, char **argv) {
  mlir::gradcomm::registerToCHeaderTranslation();
  mlir::registerToLLVMIRTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "GradComm translation driver\n"));
}
