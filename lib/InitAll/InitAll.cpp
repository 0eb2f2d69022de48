//===- InitAll.cpp - Register GradComm and the upstream it needs ----------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/InitAll.h"

#include "gradcomm/Conversion/Passes.h"
#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"
#include "gradcomm/Pipelines/Pipelines.h"
#include "gradcomm/Transforms/Passes.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

void mlir::gradcomm::registerAllGradCommDialects(DialectRegistry &registry) {
  registry.insert<GradCommDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
}

void mlir::gradcomm::registerAllGradCommPasses() {
  registerAllPasses();
  registerGradCommTransformsPasses();
  registerGradCommGeneralTransformsPasses();
  registerGradCommConversionPasses();
  registerGradCommPipelines();
}
