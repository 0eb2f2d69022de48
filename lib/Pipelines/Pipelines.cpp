//===- Pipelines.cpp - GradComm pass pipelines ----------------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Pipelines/Pipelines.h"

#include "gradcomm/Conversion/Passes.h"

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
  options.compressor = compressor;
  return options;
}

GossipRewritePassOptions GossipPipelineOptions::toPassOptions() const {
  GossipRewritePassOptions options;
  options.schedule = schedule;
  options.mixing = mixing;
  options.seed = seed;
  options.period = period;
  options.minElements = minElements;
  options.exclude.assign(exclude.begin(), exclude.end());
  options.include.assign(include.begin(), include.end());
  options.report = report;
  return options;
}

void mlir::gradcomm::buildGossipPipeline(OpPassManager &pm,
                                         const GossipPipelineOptions &options) {
  buildPartitionPipeline(pm);
  pm.addPass(createGossipRewritePass(options.toPassOptions()));
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

void mlir::gradcomm::buildLoweringPipeline(
    OpPassManager &pm, const LoweringPipelineOptions &options) {
  pm.addPass(createConvertGradCommToRuntimePass());
  if (options.exportCInterface)
    pm.addPass(createExportCInterfacePass());
  // The upstream part, as the textual pipeline a user would type, so it
  // reads like the documentation. Results that are an argument's buffer
  // (a gradient reduced in place) are dropped from the signature, so the
  // caller's buffer is the result and nothing is copied; every allocation
  // goes through the runtime (`_mlir_memref_to_llvm_alloc`), which puts it
  // on the backend's device.
  const char *bufferize =
      "func.func(convert-elementwise-to-linalg),"
      "one-shot-bufferize{bufferize-function-boundaries=1 "
      "function-boundary-type-conversion=identity-layout-map "
      "unknown-type-conversion=identity-layout-map},"
      "gradcomm-drop-in-place-results";
  const char *lower = "buffer-deallocation-pipeline,"
                      "convert-bufferization-to-memref,"
                      "func.func(convert-linalg-to-loops),"
                      "convert-scf-to-cf,"
                      "expand-strided-metadata,"
                      "lower-affine,"
                      "finalize-memref-to-llvm{use-generic-functions=1},"
                      "convert-math-to-llvm,"
                      "convert-arith-to-llvm,"
                      "convert-index-to-llvm,"
                      "convert-func-to-llvm,"
                      "convert-cf-to-llvm,"
                      "reconcile-unrealized-casts";
  if (failed(parsePassPipeline(bufferize, pm)) ||
      (!options.stopAfterBufferization && failed(parsePassPipeline(lower, pm))))
    llvm::report_fatal_error("gradcomm: the lowering pipeline does not parse");
}

void mlir::gradcomm::registerGradCommPipelines() {
  PassPipelineRegistration<GossipPipelineOptions>(
      "gradcomm-gossip-pipeline",
      "Partition an annotated single-device step and rewrite its gradient "
      "all-reduces and updates into gossiping SGD",
      buildGossipPipeline);
  PassPipelineRegistration<LoweringPipelineOptions>(
      "gradcomm-to-llvm-pipeline",
      "Lower gradcomm ops and shard.all_reduce to runtime calls, bufferize "
      "and lower everything to the LLVM dialect",
      buildLoweringPipeline);
  PassPipelineRegistration<ScaleComPipelineOptions>(
      "gradcomm-scalecom-pipeline",
      "Partition an annotated single-device step (sharding-propagation, "
      "shard-partition) and rewrite its gradient all-reduces into ScaleCom",
      buildScaleComPipeline);
}
