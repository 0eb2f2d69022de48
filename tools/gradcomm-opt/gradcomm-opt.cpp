//===- gradcomm-opt.cpp - GradComm optimizer driver -----------------------===//
//
// Part of the GradComm project.
//
// mlir-opt with the GradComm dialect, passes and pipelines registered beside
// every upstream dialect and pass.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/InitAll.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::gradcomm::registerAllGradCommPasses();
  mlir::DialectRegistry registry;
  mlir::gradcomm::registerAllGradCommDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "GradComm optimizer driver\n", registry));
}
