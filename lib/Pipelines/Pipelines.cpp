//===- Pipelines.cpp - GradComm pass pipelines ----------------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Pipelines/Pipelines.h"

#include "gradcomm/Conversion/Passes.h"
#include "gradcomm/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::gradcomm;

ScaleComRewritePassOptions ScaleComPipelineOptions::toPassOptions() const {
  ScaleComRewritePassOptions options;
  options.ratio = ratio;
  options.k = k;
  options.beta = beta;
  options.selection = selection;
  options.chunkSize = chunkSize;
  options.warmupSteps = warmupSteps;
  options.warmup = warmup;
  options.warmupStartRatio = warmupStartRatio;
  options.clip = clip;
  options.momentum = momentum;
  options.nesterov = nesterov;
  options.minElements = minElements;
  options.exclude.assign(exclude.begin(), exclude.end());
  options.include.assign(include.begin(), include.end());
  options.report = report;
  options.compressor = compressor;
  options.policy = policy;
  options.autoRatios.assign(autoRatios.begin(), autoRatios.end());
  options.autoTolerance = autoTolerance;
  options.ranks = ranks;
  options.bandwidth = bandwidth;
  options.latency = latency;
  options.memoryBandwidth = memoryBandwidth;
  options.calibration = calibration;
  return options;
}

GossipRewritePassOptions GossipPipelineOptions::toPassOptions() const {
  GossipRewritePassOptions options;
  options.schedule = schedule;
  options.mixing = mixing;
  options.seed = seed;
  options.mode = mode;
  options.period = period;
  options.minElements = minElements;
  options.exclude.assign(exclude.begin(), exclude.end());
  options.include.assign(include.begin(), include.end());
  options.report = report;
  return options;
}

EasgdRewritePassOptions EasgdPipelineOptions::toPassOptions() const {
  EasgdRewritePassOptions options;
  options.alpha = alpha;
  options.movingRate = movingRate;
  options.period = period;
  options.mode = mode;
  options.center = center;
  options.minElements = minElements;
  options.exclude.assign(exclude.begin(), exclude.end());
  options.include.assign(include.begin(), include.end());
  options.report = report;
  return options;
}

void mlir::gradcomm::buildEasgdPipeline(OpPassManager &pm,
                                        const EasgdPipelineOptions &options) {
  buildPartitionPipeline(pm);
  pm.addPass(createEasgdRewritePass(options.toPassOptions()));
}

void mlir::gradcomm::buildGossipPipeline(OpPassManager &pm,
                                         const GossipPipelineOptions &options) {
  buildPartitionPipeline(pm);
  pm.addPass(createGossipRewritePass(options.toPassOptions()));
}

void mlir::gradcomm::buildPartitionPipeline(OpPassManager &pm) {
  // Input upstream partitioning would crash on becomes an error first:
  // before propagation (conflicting annotations) and after it (tensors
  // left without a sharding). Both upstream passes are function passes
  // (docs/design/conventions.md).
  pm.addPass(createVerifyShardingsPass());
  pm.addNestedPass<func::FuncOp>(shard::createShardingPropagation());
  VerifyShardingsPassOptions propagated;
  propagated.propagated = true;
  pm.addPass(createVerifyShardingsPass(propagated));
  pm.addNestedPass<func::FuncOp>(shard::createPartition());
}

void mlir::gradcomm::buildScaleComPipeline(
    OpPassManager &pm, const ScaleComPipelineOptions &options) {
  buildPartitionPipeline(pm);
  pm.addPass(createScaleComRewritePass(options.toPassOptions()));
}

void mlir::gradcomm::buildBufferizationPipeline(OpPassManager &pm,
                                                StringRef onError,
                                                bool overlap) {
  pm.addPass(createNameCollectivesPass());
  // Each reduction right after its gradient (names are already stamped).
  if (overlap)
    pm.addPass(createHoistCollectivesPass());
  ConvertGradCommToRuntimePassOptions toRuntime;
  toRuntime.onError = onError.str();
  pm.addPass(createConvertGradCommToRuntimePass(toRuntime));
  // Results that are an argument's buffer (a gradient reduced in place) are
  // dropped from the signature, so the caller's buffer is the result and
  // nothing is copied.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  // Shared scalars (the learning rate) read once: One-Shot Bufferize's
  // analysis is quadratic in the readers of one tensor.
  pm.addNestedPass<func::FuncOp>(createScalarOperandsPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.unknownTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createDropInPlaceResultsPass());
  // Before the guards: the waits it places are runtime calls, never
  // guarded.
  if (overlap)
    pm.addPass(createOverlapCollectivesPass());
  if (onError == "return")
    pm.addPass(createGuardFailedStepsPass());
}

void mlir::gradcomm::buildLLVMLoweringPipeline(OpPassManager &pm,
                                               bool exportCInterface,
                                               bool blasMatmuls) {
  if (exportCInterface)
    pm.addPass(createExportCInterfacePass());
  // Upstream's buffer-deallocation-pipeline, with gradcomm-free-after-last-use
  // between the ownership pass and the simplification: temporaries are
  // freed after their last use, and the simplification no longer sees one
  // dealloc of every buffer of the step (quadratic in the parameters).
  memref::ExpandReallocPassOptions expandRealloc;
  expandRealloc.emitDeallocs = false;
  pm.addNestedPass<func::FuncOp>(
      memref::createExpandReallocPass(expandRealloc));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(
      bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createFreeAfterLastUsePass());
  pm.addNestedPass<func::FuncOp>(
      bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
  // One function per loop nest: LLVM's work stays per function, so compile
  // time is linear in the number of parameters.
  pm.addPass(createOutlineKernelsPass());
  // Matrix products (linear layers, im2col convolutions, attention) go to
  // libgradcomm_blas: after outlining, which proves their outputs do not
  // alias their inputs (llvm.noalias).
  if (blasMatmuls)
    pm.addPass(createConvertLinalgToBlasPass());
  // Reductions outside the contiguous output dimension: LLVM vectorizes the
  // inner loop without reordering any floating-point addition.
  pm.addNestedPass<func::FuncOp>(createInterchangeReductionsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Every allocation goes through the runtime (`gradcomm_memref_alloc`),
  // which puts it on the backend's device: the generic functions, under
  // the runtime's own names (not c_runner_utils', which another library in
  // the process could provide).
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createOwnMemrefRuntimePass());
  // Math ops become libm calls before math-to-llvm sees them: upstream's
  // math-to-llvm lowers expm1 to exp(x) - 1 and log1p to log(1 + x), which
  // lose every digit near 0 (Adam's bias correction), and has no lowering
  // for erf (GELU). exp and log end as the same libm calls either way.
  // Steps link -lm (gradcomm_compile_step and --emit=shared do).
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertMathToLLVMPass());
  // bfloat16 as a storage type: arithmetic on it runs in float32 and rounds
  // once per op (what PyTorch's CPU kernels do), and the conversions become
  // integer ops (round to nearest even). LLVM would otherwise call
  // libgcc's __truncsfbf2, which Debian 12's GCC 12 does not have.
  arith::ArithEmulateUnsupportedFloatsOptions emulateBf16;
  emulateBf16.sourceTypeStrs = {"bf16"};
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulateBf16));
  pm.addPass(createLowerBf16Pass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createFinalizeKernelsPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::gradcomm::buildLoweringPipeline(
    OpPassManager &pm, const LoweringPipelineOptions &options) {
  buildBufferizationPipeline(pm, options.onError, options.overlap);
  if (!options.stopAfterBufferization)
    buildLLVMLoweringPipeline(pm, options.exportCInterface,
                              options.blasMatmuls);
}

bool mlir::gradcomm::hasShardingAnnotations(ModuleOp module) {
  bool annotated = false;
  module.walk([&](shard::ShardOp) {
    annotated = true;
    return WalkResult::interrupt();
  });
  return annotated;
}

void mlir::gradcomm::buildRewritePipeline(OpPassManager &pm,
                                          const CompileOptions &options,
                                          bool partition) {
  if (partition)
    buildPartitionPipeline(pm);
  switch (options.strategy) {
  case Strategy::Dense:
    break;
  case Strategy::ScaleCom:
  case Strategy::LocalTopk: {
    ScaleComRewritePassOptions pass = options.scalecom.toPassOptions();
    pass.compressor =
        options.strategy == Strategy::LocalTopk ? "local-topk" : "cltk";
    pm.addPass(createScaleComRewritePass(pass));
    break;
  }
  case Strategy::Gossip:
  case Strategy::GossipAsync:
    pm.addPass(createGossipRewritePass(options.gossip.toPassOptions()));
    break;
  case Strategy::Easgd:
  case Strategy::EasgdAsync:
    pm.addPass(createEasgdRewritePass(options.easgd.toPassOptions()));
    break;
  }
  // What the rewrite left dense, fused into fewer calls.
  if (options.bucketElements > 0) {
    BucketAllReducesPassOptions bucket;
    bucket.bucketElements = options.bucketElements;
    pm.addPass(createBucketAllReducesPass(bucket));
  }
}

void mlir::gradcomm::buildCompilePipeline(OpPassManager &pm,
                                          const CompileOptions &options,
                                          bool partition,
                                          bool stopAfterBufferization) {
  buildRewritePipeline(pm, options, partition);
  buildBufferizationPipeline(pm, options.onError, options.overlap);
  if (!stopAfterBufferization)
    buildLLVMLoweringPipeline(pm, /*exportCInterface=*/true,
                              options.blasMatmuls);
}

void mlir::gradcomm::registerGradCommPipelines() {
  PassPipelineRegistration<EasgdPipelineOptions>(
      "gradcomm-easgd-pipeline",
      "Partition an annotated single-device step and rewrite its gradient "
      "all-reduces and updates into synchronous elastic averaging (EASGD)",
      buildEasgdPipeline);
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
