//===- Pipelines.cpp - GradComm pass pipelines ----------------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::gradcomm;

ScaleComRewritePassOptions ScaleComPipelineOptions::toPassOptions() const {
  ScaleComRewritePassOptions options;
  options.ratio = ratio;
  options.k = k;
  options.beta = beta;
  options.selection = selection;
  options.chunkSize = chunkSize;
  options.minElements = minElements;
  options.exclude.assign(exclude.begin(), exclude.end());
  options.include.assign(include.begin(), include.end());
  options.report = report;
  return options;
}

void mlir::gradcomm::buildPartitionPipeline(OpPassManager &pm) {
  // Both are function passes upstream (STYLE.md).
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(shard::createShardingPropagation());
  funcPm.addPass(shard::createPartition());
}

void mlir::gradcomm::buildScaleComPipeline(
    OpPassManager &pm, const ScaleComPipelineOptions &options) {
  buildPartitionPipeline(pm);
  pm.addPass(createScaleComRewritePass(options.toPassOptions()));
}

void mlir::gradcomm::registerGradCommPipelines() {
  PassPipelineRegistration<ScaleComPipelineOptions>(
      "gradcomm-scalecom-pipeline",
      "Partition an annotated single-device step (sharding-propagation, "
      "shard-partition) and rewrite its gradient all-reduces into ScaleCom",
      buildScaleComPipeline);
}
