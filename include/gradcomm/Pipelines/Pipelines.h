//===- Pipelines.h - GradComm pass pipelines --------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Each pipeline is an options struct plus one builder, used by gradcomm-opt
// (through registration), gradcomm-compile and the tests alike.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_PIPELINES_PIPELINES_H
#define GRADCOMM_PIPELINES_PIPELINES_H

#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/STLExtras.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
class OpPassManager;
} // namespace mlir

namespace mlir::gradcomm {

/// A pipeline options struct whose options can also be found by name, so a
/// driver can bind its command-line flags to them (gradcomm-compile's
/// `--ratio=8` sets `ratio` here): each option is declared once, in the
/// struct, and reaches `gradcomm-opt` pipelines and driver flags alike.
template <typename Derived>
struct BindablePipelineOptions : public PassPipelineOptions<Derived> {
  /// The option called `name`, or null.
  llvm::cl::Option *findOption(llvm::StringRef name) const {
    return this->OptionsMap.lookup(name);
  }
  /// The options' names, sorted.
  std::vector<std::string> optionNames() const {
    std::vector<std::string> names;
    for (const auto &entry : this->OptionsMap)
      names.push_back(entry.first.str());
    llvm::sort(names);
    return names;
  }
};

/// Options of `gradcomm-scalecom-pipeline`: those of `gradcomm-scalecom`,
/// under the same names, forwarded as they are.
struct ScaleComPipelineOptions
    : public BindablePipelineOptions<ScaleComPipelineOptions> {
  Option<double> ratio{*this, "ratio",
                       llvm::cl::desc("Compression ratio N / k"),
                       llvm::cl::init(100.0)};
  Option<int64_t> k{*this, "k", llvm::cl::desc("Fixed k (0: use ratio)"),
                    llvm::cl::init(0)};
  Option<double> beta{*this, "beta",
                      llvm::cl::desc("Low-pass coefficient in (0, 1]"),
                      llvm::cl::init(0.5)};
  Option<Selection> selection{
      *this, "selection",
      llvm::cl::desc("Index selection on the leader: exact | chunk"),
      llvm::cl::init(Selection::Exact),
      llvm::cl::values(
          clEnumValN(Selection::Exact, "exact", "true top-k of |m + g|"),
          clEnumValN(Selection::Chunk, "chunk", "top-1 per chunk"))};
  Option<int64_t> chunkSize{*this, "chunk-size",
                            llvm::cl::desc("Chunk length (0: round(ratio))"),
                            llvm::cl::init(0)};
  Option<int64_t> warmupSteps{
      *this, "warmup-steps",
      llvm::cl::desc("Recipe: dense (or ramp) warm-up steps (0: none; -1: "
                     "the recipe's 100 for cltk, none for local-topk)"),
      llvm::cl::init(-1)};
  Option<std::string> warmup{*this, "warmup",
                             llvm::cl::desc("Recipe: warm-up dense | ramp"),
                             llvm::cl::init("dense")};
  Option<double> warmupStartRatio{
      *this, "warmup-start-ratio",
      llvm::cl::desc("Recipe: warmup=ramp's first ratio (>= 1)"),
      llvm::cl::init(4.0)};
  Option<double> clip{
      *this, "clip",
      llvm::cl::desc("Recipe: local L2 clipping threshold (0: off)"),
      llvm::cl::init(0.0)};
  Option<double> momentum{
      *this, "momentum",
      llvm::cl::desc("Recipe: momentum correction in [0, 1) (0: off; the "
                     "step must be exported with plain SGD)"),
      llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov",
                        llvm::cl::desc("Recipe: Nesterov momentum correction"),
                        llvm::cl::init(false)};
  Option<int64_t> minElements{
      *this, "min-elements",
      llvm::cl::desc("Tensors with fewer elements stay dense"),
      llvm::cl::init(1024)};
  ListOption<std::string> exclude{
      *this, "exclude",
      llvm::cl::desc("Parameters whose gradients stay dense")};
  ListOption<std::string> include{
      *this, "include",
      llvm::cl::desc("When given, only these parameters are compressed")};
  Option<bool> report{*this, "report",
                      llvm::cl::desc("Remark per all-reduce: what and why"),
                      llvm::cl::init(false)};
  Option<std::string> compressor{
      *this, "compressor",
      llvm::cl::desc("cltk (ScaleCom) or local-topk (all-gather baseline)"),
      llvm::cl::init("cltk")};
  Option<std::string> policy{
      *this, "policy",
      llvm::cl::desc("fixed (every gradient at ratio) or auto (per tensor, "
                     "dense or a ratio of auto-ratios, from the cost model)"),
      llvm::cl::init("fixed")};
  ListOption<int64_t> autoRatios{
      *this, "auto-ratios",
      llvm::cl::desc("policy=auto: candidate ratios (default 10,100,400)")};
  Option<double> autoTolerance{
      *this, "auto-tolerance",
      llvm::cl::desc("policy=auto: the least compressed candidate within "
                     "this fraction of the fastest wins"),
      llvm::cl::init(0.05)};
  Option<int64_t> ranks{
      *this, "ranks",
      llvm::cl::desc("policy=auto: ranks when the grid axis is dynamic"),
      llvm::cl::init(0)};
  Option<std::string> bandwidth{
      *this, "bandwidth",
      llvm::cl::desc("policy=auto: link bandwidth, e.g. 1Gbit")};
  Option<std::string> latency{
      *this, "latency",
      llvm::cl::desc("policy=auto: per-message latency, e.g. 5us")};
  Option<std::string> memoryBandwidth{
      *this, "memory-bandwidth",
      llvm::cl::desc("policy=auto: one rank's memory bandwidth, e.g. 20GB")};
  Option<std::string> calibration{
      *this, "calibration",
      llvm::cl::desc("policy=auto: a calibration file (gradcomm-calibrate)")};

  /// The same values as the options of the `gradcomm-scalecom` pass.
  ScaleComRewritePassOptions toPassOptions() const;
};

/// Upstream `sharding-propagation` and `shard-partition` on every function,
/// then `gradcomm-scalecom`: an annotated single-device step becomes an SPMD
/// step with compressed gradient communication.
void buildScaleComPipeline(OpPassManager &pm,
                           const ScaleComPipelineOptions &options);

/// Options of `gradcomm-easgd-pipeline`: those of `gradcomm-easgd`.
struct EasgdPipelineOptions
    : public BindablePipelineOptions<EasgdPipelineOptions> {
  Option<double> alpha{
      *this, "alpha",
      llvm::cl::desc("Elastic coefficient in (0, 1/n]; 0: moving-rate / n"),
      llvm::cl::init(0.0)};
  Option<double> movingRate{
      *this, "moving-rate",
      llvm::cl::desc("The center's moving rate n * alpha in (0, 1]"),
      llvm::cl::init(0.9)};
  Option<int64_t> period{*this, "period",
                         llvm::cl::desc("Exchange with the center every tau "
                                        "steps"),
                         llvm::cl::init(1)};
  Option<ExchangeMode> mode{
      *this, "mode",
      llvm::cl::desc("sync: exchanges meet | async: one-sided, nobody waits"),
      llvm::cl::init(ExchangeMode::Sync),
      llvm::cl::values(clEnumValN(ExchangeMode::Sync, "sync", "both meet"),
                       clEnumValN(ExchangeMode::Async, "async", "one-sided"))};
  Option<CenterPlacement> center{
      *this, "center",
      llvm::cl::desc("mode=async only: rank0 | sharded (one shard per rank)"),
      llvm::cl::init(CenterPlacement::Rank0),
      llvm::cl::values(
          clEnumValN(CenterPlacement::Rank0, "rank0", "on rank 0"),
          clEnumValN(CenterPlacement::Sharded, "sharded", "one per rank"))};
  Option<int64_t> minElements{
      *this, "min-elements",
      llvm::cl::desc("Smaller parameters keep their dense all-reduce"),
      llvm::cl::init(0)};
  ListOption<std::string> exclude{*this, "exclude",
                                  llvm::cl::desc("Parameters kept dense")};
  ListOption<std::string> include{
      *this, "include",
      llvm::cl::desc("Only these parameters are averaged elastically")};
  Option<bool> report{*this, "report",
                      llvm::cl::desc("Remark per all-reduce: what and why"),
                      llvm::cl::init(false)};

  /// The same values as the options of the `gradcomm-easgd` pass.
  EasgdRewritePassOptions toPassOptions() const;
};

/// Partitioning (as buildScaleComPipeline) followed by `gradcomm-easgd`.
void buildEasgdPipeline(OpPassManager &pm, const EasgdPipelineOptions &options);

/// Options of `gradcomm-gossip-pipeline`: those of `gradcomm-gossip`.
struct GossipPipelineOptions
    : public BindablePipelineOptions<GossipPipelineOptions> {
  Option<Schedule> schedule{
      *this, "schedule",
      llvm::cl::desc("Peer schedule: matching | ring | hypercube"),
      llvm::cl::init(Schedule::Matching),
      llvm::cl::values(
          clEnumValN(Schedule::Matching, "matching", "shared-seed matching"),
          clEnumValN(Schedule::Ring, "ring", "alternating neighbours"),
          clEnumValN(Schedule::Hypercube, "hypercube", "i XOR 2^(t mod d)"),
          clEnumValN(Schedule::Random, "random",
                     "random peer per rank and step (async)"))};
  Option<double> mixing{*this, "mixing",
                        llvm::cl::desc("Mixing weight in (0, 1)"),
                        llvm::cl::init(0.5)};
  Option<int64_t> seed{*this, "seed", llvm::cl::desc("Shared seed"),
                       llvm::cl::init(0)};
  Option<ExchangeMode> mode{
      *this, "mode",
      llvm::cl::desc("sync: exchanges meet | async: one-sided, nobody waits"),
      llvm::cl::init(ExchangeMode::Sync),
      llvm::cl::values(clEnumValN(ExchangeMode::Sync, "sync", "both meet"),
                       clEnumValN(ExchangeMode::Async, "async", "one-sided"))};
  Option<int64_t> period{*this, "period",
                         llvm::cl::desc("Exchange every p steps"),
                         llvm::cl::init(1)};
  Option<int64_t> minElements{
      *this, "min-elements",
      llvm::cl::desc("Smaller parameters keep their dense all-reduce"),
      llvm::cl::init(0)};
  ListOption<std::string> exclude{*this, "exclude",
                                  llvm::cl::desc("Parameters kept dense")};
  ListOption<std::string> include{
      *this, "include", llvm::cl::desc("Only these parameters are gossiped")};
  Option<bool> report{*this, "report",
                      llvm::cl::desc("Remark per all-reduce: what and why"),
                      llvm::cl::init(false)};

  /// The same values as the options of the `gradcomm-gossip` pass.
  GossipRewritePassOptions toPassOptions() const;
};

/// Partitioning (as buildScaleComPipeline) followed by `gradcomm-gossip`.
void buildGossipPipeline(OpPassManager &pm,
                         const GossipPipelineOptions &options);

/// The partitioning prefix every GradComm pipeline shares.
void buildPartitionPipeline(OpPassManager &pm);

/// Options of `gradcomm-to-llvm-pipeline`.
struct LoweringPipelineOptions
    : public PassPipelineOptions<LoweringPipelineOptions> {
  Option<bool> exportCInterface{
      *this, "export-c-interface",
      llvm::cl::desc("Give public functions a _mlir_ciface_ entry point"),
      llvm::cl::init(true)};
  Option<bool> stopAfterBufferization{
      *this, "stop-after-bufferization",
      llvm::cl::desc("Stop at memref IR (the signatures trainers call)"),
      llvm::cl::init(false)};
  Option<std::string> onError{
      *this, "on-error",
      llvm::cl::desc("A failed runtime call: 'abort' the job, or 'return' "
                     "from the step (gradcomm_take_step_status)"),
      llvm::cl::init("abort")};
  Option<bool> overlap{
      *this, "overlap",
      llvm::cl::desc("Start dense all-reduces and fused ScaleCom steps "
                     "where they are and wait where their result is first "
                     "needed (gradcomm-overlap-collectives)"),
      llvm::cl::init(false)};
  Option<bool> blasMatmuls{
      *this, "blas-matmuls",
      llvm::cl::desc("Float32 matrix products as calls of libgradcomm_blas "
                     "(convert-linalg-to-blas); false keeps them loops, "
                     "each output summed in order"),
      llvm::cl::init(true)};
};

/// From tensor IR with gradcomm ops and shard.all_reduce (the output of the
/// ScaleCom or gossip pipeline, or hand-written SPMD IR) to the LLVM
/// dialect: buildBufferizationPipeline, then (unless stopped there)
/// buildLLVMLoweringPipeline.
void buildLoweringPipeline(OpPassManager &pm,
                           const LoweringPipelineOptions &options);

/// gradcomm-name-collectives, convert-gradcomm-to-runtime, elementwise
/// arith on tensors to linalg, One-Shot Bufferize (function boundaries
/// included, identity layouts) and gradcomm-drop-in-place-results: memref IR
/// with the signatures trainers call (what the C header declares).
/// `onError` is convert-gradcomm-to-runtime's option ("abort", "return");
/// `overlap` adds gradcomm-overlap-collectives after bufferization.
void buildBufferizationPipeline(OpPassManager &pm,
                                llvm::StringRef onError = "abort",
                                bool overlap = false);

/// The rest, to the LLVM dialect: C interfaces (optional), buffer
/// deallocation, gradcomm-outline-kernels, convert-linalg-to-blas (unless
/// `blasMatmuls` is false), and the standard lowering of linalg, scf,
/// memref, arith, math, index, func and cf.
void buildLLVMLoweringPipeline(OpPassManager &pm, bool exportCInterface,
                               bool blasMatmuls = true);

/// How gradient all-reduces are communicated by a compiled step.
enum class Strategy {
  Dense,
  ScaleCom,
  LocalTopk,
  Gossip,
  GossipAsync,
  Easgd,
  EasgdAsync
};

/// Everything gradcomm-compile decides: the strategy and the options of the
/// rewrite it runs (the pipeline option structs above, bound to its flags).
struct CompileOptions {
  Strategy strategy = Strategy::ScaleCom;
  /// convert-gradcomm-to-runtime's on-error ("abort" or "return").
  std::string onError = "abort";
  /// gradcomm-bucket-all-reduces after the rewrite, with this limit (0:
  /// off).
  int64_t bucketElements = 0;
  /// gradcomm-overlap-collectives after bufferization.
  bool overlap = false;
  /// convert-linalg-to-blas: float32 matrix products through libgradcomm_blas.
  bool blasMatmuls = true;
  ScaleComPipelineOptions scalecom;
  GossipPipelineOptions gossip;
  EasgdPipelineOptions easgd;
};

/// True when `module` carries `shard.shard` annotations (a single-device
/// step that needs partitioning first).
bool hasShardingAnnotations(ModuleOp module);

/// Partitioning (when `partition`) and the strategy's rewrite.
void buildRewritePipeline(OpPassManager &pm, const CompileOptions &options,
                          bool partition);

/// The whole pipeline of gradcomm-compile: buildRewritePipeline, then
/// buildBufferizationPipeline, then (unless `stopAfterBufferization`)
/// buildLLVMLoweringPipeline with C interfaces.
void buildCompilePipeline(OpPassManager &pm, const CompileOptions &options,
                          bool partition, bool stopAfterBufferization);

/// Registers every GradComm pipeline with the pass registry.
void registerGradCommPipelines();

} // namespace mlir::gradcomm

#endif // GRADCOMM_PIPELINES_PIPELINES_H
