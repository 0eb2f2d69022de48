//===- ScaleComRewrite.cpp - shard.all_reduce -> ScaleCom ops -------------===//
//
// Part of the GradComm project.
//
// Rewrites gradient all-reduces into cltk_compress + sparse_all_reduce +
// memory_update with a module-level state per gradient. See
// docs/scalecom.md for the policy and docs/design/architecture.md section 2 for
// the semantics.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Analysis/CostModel.h"
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/Dialect/GradComm/Transforms/GradientAnalysis.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <optional>

namespace mlir::gradcomm {
#define GEN_PASS_DEF_SCALECOMREWRITEPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

namespace {

/// The compression parameters resolved for one gradient.
struct CompressionPlan {
  int64_t k = 0;
  double beta = 1.0;
  Selection selection = Selection::Exact;
  std::optional<int64_t> chunkSize;
};

/// policy=auto's verdict on one all-reduce.
struct AutoChoice {
  /// False where the user fixed k or the policy (op or argument).
  bool applies = false;
  /// The chosen ratio; 0: dense.
  int64_t ratio = 0;
  /// The predictions behind it.
  std::string why;
};

/// What the pass does with one all-reduce.
struct Decision {
  bool compress = false;
  /// Momentum correction of a gradient the policy keeps dense: the recipe's
  /// dense call (k = N), which keeps its velocity.
  bool denseWithMomentum = false;
  /// Why it stays dense (when !compress), or policy=auto's reasons.
  std::string reason;
  BlockArgument parameter;
  CompressionPlan plan;
};

class ScaleComRewritePass
    : public gradcomm::impl::ScaleComRewritePassBase<ScaleComRewritePass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult validateOptions();
  FailureOr<Decision> decide(Operation *op);
  FailureOr<Decision> keepDense(Operation *op, const RewriteDecision &shared,
                                Decision decision);
  LogicalResult checkPlainSgd(Operation *op, const Decision &decision);
  FailureOr<AutoChoice> chooseRatio(Operation *op,
                                    const RewriteDecision &shared,
                                    int64_t numElements);
  FailureOr<CompressionPlan> makePlan(Operation *op,
                                      const PolicyOverrides &overrides,
                                      int64_t numElements);
  void rewrite(Operation *op, const Decision &decision,
               SymbolTable &symbolTable);

  /// policy=auto's cluster (ranks are taken per op from its grid).
  std::optional<ClusterModel> cluster;
  SmallVector<int64_t> candidateRatios;
  /// `warmup-steps` resolved: its default (-1) is the recipe's warm-up for
  /// the cltk compressor and none for local-topk.
  int64_t recipeWarmupSteps = 0;
};

} // namespace

static constexpr llvm::StringLiteral kPass = "gradcomm-scalecom";
/// The recipe's dense warm-up when `warmup-steps` is not given: the study
/// in docs/results.md chose it (docs/scalecom.md, "The recipe"), as the
/// runtime's gradcomm_scalecom_options_init and the DDP hook do.
static constexpr int64_t kRecipeWarmupSteps = 100;

LogicalResult ScaleComRewritePass::validateOptions() {
  ModuleOp module = getOperation();
  if (!(ratio > 0.0))
    return module.emitError()
           << "gradcomm-scalecom: option 'ratio' must be > 0, got "
           << formatNumber(ratio);
  if (!(beta > 0.0 && beta <= 1.0))
    return module.emitError()
           << "gradcomm-scalecom: option 'beta' must be in (0, 1], got "
           << formatNumber(beta);
  if (k < 0)
    return module.emitError()
           << "gradcomm-scalecom: option 'k' must be >= 1 (or 0 for ratio), "
              "got "
           << int64_t(k);
  if (chunkSize < 0)
    return module.emitError() << "gradcomm-scalecom: option 'chunk-size' "
                                 "must be >= 1 (or 0 for round(ratio)), got "
                              << int64_t(chunkSize);
  if (compressor != "cltk" && compressor != "local-topk")
    return module.emitError() << "gradcomm-scalecom: option 'compressor' "
                                 "must be cltk or local-topk, got '"
                              << compressor << "'";
  if (minElements < 0)
    return module.emitError()
           << "gradcomm-scalecom: option 'min-elements' must be >= 0, got "
           << int64_t(minElements);
  if (warmupSteps < -1)
    return module.emitError()
           << "gradcomm-scalecom: option 'warmup-steps' must be >= 0 (or -1 "
              "for the recipe's default), got "
           << int64_t(warmupSteps);
  recipeWarmupSteps = warmupSteps >= 0             ? int64_t(warmupSteps)
                      : compressor == "local-topk" ? 0
                                                   : kRecipeWarmupSteps;
  if (warmup != "dense" && warmup != "ramp")
    return module.emitError() << "gradcomm-scalecom: option 'warmup' must be "
                                 "dense or ramp, got '"
                              << warmup << "'";
  if (warmup == "ramp" && !(warmupStartRatio >= 1.0))
    return module.emitError() << "gradcomm-scalecom: option "
                                 "'warmup-start-ratio' must be >= 1, got "
                              << formatNumber(warmupStartRatio);
  if (warmup == "ramp" &&
      (recipeWarmupSteps == 0 || selection != Selection::Exact))
    return module.emitError()
           << "gradcomm-scalecom: warmup=ramp needs warmup-steps > 0 and "
              "selection=exact";
  if (!(clip >= 0.0 && std::isfinite(double(clip))))
    return module.emitError()
           << "gradcomm-scalecom: option 'clip' must be finite and >= 0, got "
           << formatNumber(clip);
  if (compressor == "local-topk" && (warmupSteps > 0 || clip != 0.0))
    return module.emitError()
           << "gradcomm-scalecom: warm-up and clipping are ScaleCom's recipe; "
              "compressor=local-topk does not take them";
  if (!(momentum >= 0.0 && momentum < 1.0))
    return module.emitError()
           << "gradcomm-scalecom: option 'momentum' must be in [0, 1), got "
           << formatNumber(momentum);
  if (nesterov && momentum == 0.0)
    return module.emitError()
           << "gradcomm-scalecom: option 'nesterov' needs 'momentum'";
  if (compressor == "local-topk" && momentum > 0.0)
    return module.emitError()
           << "gradcomm-scalecom: momentum correction is ScaleCom's recipe; "
              "compressor=local-topk does not take it (export the step with "
              "the optimizer's momentum instead)";
  if (policy != "fixed" && policy != "auto")
    return module.emitError() << "gradcomm-scalecom: option 'policy' must be "
                                 "fixed or auto, got '"
                              << policy << "'";
  if (policy == "fixed") {
    // The cluster options would be silently ignored: refused instead.
    const char *autoOnly = !autoRatios.empty()        ? "auto-ratios"
                           : !bandwidth.empty()       ? "bandwidth"
                           : !latency.empty()         ? "latency"
                           : !memoryBandwidth.empty() ? "memory-bandwidth"
                           : !calibration.empty()     ? "calibration"
                           : ranks != 0               ? "ranks"
                                                      : nullptr;
    if (autoOnly)
      return module.emitError()
             << "gradcomm-scalecom: option '" << autoOnly
             << "' applies to policy=auto only (policy is fixed)";
    return success();
  }
  // policy=auto chooses k per tensor: options that fix it conflict.
  if (k > 0 || chunkSize > 0 || compressor != "cltk")
    return module.emitError()
           << "gradcomm-scalecom: policy=auto chooses the ratio per tensor "
              "with the cltk compressor; drop "
           << (k > 0           ? "'k'"
               : chunkSize > 0 ? "'chunk-size'"
                               : "'compressor'");
  candidateRatios.assign(autoRatios.begin(), autoRatios.end());
  if (candidateRatios.empty())
    candidateRatios = {10, 100, 400};
  for (int64_t candidate : candidateRatios)
    if (candidate < 2)
      return module.emitError() << "gradcomm-scalecom: option 'auto-ratios' "
                                   "needs ratios >= 2, got "
                                << candidate;
  if (!(autoTolerance >= 0.0 && autoTolerance < 1.0))
    return module.emitError() << "gradcomm-scalecom: option 'auto-tolerance' "
                                 "must be in [0, 1), got "
                              << formatNumber(autoTolerance);
  if (ranks < 0)
    return module.emitError()
           << "gradcomm-scalecom: option 'ranks' must be >= 1 (or 0 for the "
              "grid's), got "
           << int64_t(ranks);
  ClusterSpec spec{calibration, 0, bandwidth, latency, memoryBandwidth};
  llvm::Expected<ClusterModel> model = buildClusterModel(spec);
  if (!model)
    return module.emitError() << "gradcomm-scalecom: policy=auto: "
                              << llvm::toString(model.takeError());
  cluster = *model;
  return success();
}

/// policy=auto for one accepted all-reduce; failure is diagnosed. Per-op and
/// per-argument settings of k and the policy win, as under policy=fixed.
/// A reduce-scatter is weighed with the model's reduce-scatter forms.
FailureOr<AutoChoice>
ScaleComRewritePass::chooseRatio(Operation *op, const RewriteDecision &shared,
                                 int64_t numElements) {
  const PolicyOverrides &overrides = shared.overrides;
  if (shared.forced || overrides.ratio || overrides.k || overrides.chunkSize)
    return AutoChoice();
  int64_t groupSize = reducedGroupSize(op);
  if (ShapedType::isDynamic(groupSize)) {
    if (ranks == 0)
      return op->emitError()
             << "gradcomm-scalecom: policy=auto needs the number of ranks: "
                "the grid axis has no static size; give option 'ranks'";
    groupSize = ranks;
  } else if (ranks > 0 && ranks != groupSize) {
    return op->emitError() << "gradcomm-scalecom: option 'ranks' = "
                           << int64_t(ranks) << " but the grid axis has "
                           << groupSize << " ranks";
  }
  ClusterModel model = *cluster;
  model.ranks = groupSize;
  const bool exact =
      overrides.selection.value_or(selection) == Selection::Exact;
  const bool sharded = isa<shard::ReduceScatterOp>(op);
  // A 16-bit gradient's values travel in 16 bits, dense or compressed.
  Type element =
      cast<RankedTensorType>(reducedInput(op).getType()).getElementType();
  const int64_t valueBytes = element.isBF16() || element.isF16() ? 2 : 4;
  CompressionChoice choice =
      chooseCompression(model, numElements, candidateRatios, autoTolerance,
                        exact, sharded, valueBytes);

  std::string predictions =
      llvm::formatv("dense {0:f4} ms", choice.dense.seconds * 1e3).str();
  for (auto [ratio, prediction] : llvm::zip(candidateRatios, choice.candidates))
    predictions +=
        llvm::formatv(", ratio {0} {1:f4} ms", ratio, prediction.seconds * 1e3)
            .str();
  AutoChoice verdict;
  verdict.applies = true;
  verdict.ratio = choice.ratio;
  verdict.why =
      llvm::formatv("policy=auto{5}{6} on {0} ranks, {1:f3} Gbit/s, {2:f2} "
                    "us: {3} -> {4}",
                    groupSize, model.linkBytesPerSecond * 8 / 1e9,
                    model.latencySeconds * 1e6, predictions,
                    choice.ratio ? "ratio " + std::to_string(choice.ratio)
                                 : std::string("dense"),
                    sharded ? " (reduce-scatter)" : "",
                    valueBytes == 2 ? " (16-bit values)" : "")
          .str();
  return verdict;
}

FailureOr<CompressionPlan>
ScaleComRewritePass::makePlan(Operation *op, const PolicyOverrides &overrides,
                              int64_t numElements) {
  auto fail = [&]() { return op->emitError() << "gradcomm-scalecom: "; };
  // Each override was range-checked by the dialect's attribute verifier;
  // what is left are the conflicts between fields.
  CompressionPlan plan;
  plan.beta = overrides.beta.value_or(beta);
  plan.selection = overrides.selection.value_or(selection);
  double planRatio = overrides.ratio.value_or(ratio);
  std::optional<int64_t> explicitK = overrides.k;
  if (!explicitK && k > 0)
    explicitK = k;

  if (plan.selection == Selection::Chunk) {
    if (warmup == "ramp")
      return fail() << "warmup=ramp needs selection = exact; this "
                       "all-reduce asks for chunk selection";
    int64_t c = overrides.chunkSize ? *overrides.chunkSize
                : chunkSize > 0     ? int64_t(chunkSize)
                                    : std::llround(planRatio);
    if (c < 1)
      return fail() << "'chunk_size' must be >= 1, got " << c;
    plan.chunkSize = c;
    plan.k = llvm::divideCeil(numElements, c);
    if (explicitK && *explicitK != plan.k)
      return fail() << "'k' = " << *explicitK
                    << " conflicts with selection = chunk, which gives k = "
                       "ceil(N / chunk_size) = "
                    << plan.k;
    return plan;
  }

  plan.k = explicitK ? *explicitK
                     : static_cast<int64_t>(std::ceil(
                           static_cast<double>(numElements) / planRatio));
  if (plan.k < 1 || plan.k > numElements)
    return fail() << "k = " << plan.k << " is outside [1, " << numElements
                  << "] (the element count of this gradient)";
  return plan;
}

FailureOr<Decision> ScaleComRewritePass::decide(Operation *op) {
  // 16-bit gradient all-reduces: cltk's fused step, or local top-k, each
  // sending its values in 16 bits.
  RewriteFilter filter{minElements, include, exclude,
                       /*halfGradients=*/true};
  FailureOr<RewriteDecision> shared =
      decideRewrite(op, Policy::ScaleCom, filter, kPass);
  if (failed(shared))
    return failure();
  Decision decision;
  decision.parameter = shared->use.parameter;
  if (!shared->rewrite) {
    decision.reason = shared->reason;
    return keepDense(op, *shared, decision);
  }
  auto type = cast<RankedTensorType>(reducedInput(op).getType());
  if (isa<shard::ReduceScatterOp>(op)) {
    // The sharded step is CLT-k's alone, and its runtime call's warm-up is
    // dense.
    if (compressor == "local-topk") {
      if (shared->forced)
        return op->emitError()
               << kPass
               << ": compressor=local-topk has no reduce-scatter "
                  "form; this reduce-scatter is marked gradcomm.policy = "
                  "\"scalecom\"";
      decision.reason = "compressor=local-topk has no reduce-scatter form";
      return decision;
    }
    if (warmup == "ramp")
      return op->emitError() << kPass
                             << ": warmup=ramp is not built for the compressed "
                                "reduce-scatter (its warm-up is dense)";
  }
  PolicyOverrides overrides = shared->overrides;
  if (cluster) {
    FailureOr<AutoChoice> choice =
        chooseRatio(op, *shared, type.getNumElements());
    if (failed(choice))
      return failure();
    decision.reason = choice->why;
    if (choice->applies && choice->ratio == 0)
      return keepDense(op, *shared, decision);
    if (choice->applies)
      overrides.ratio = static_cast<double>(choice->ratio);
  }
  FailureOr<CompressionPlan> plan =
      makePlan(op, overrides, type.getNumElements());
  if (failed(plan))
    return failure();
  decision.compress = true;
  decision.plan = *plan;
  return decision;
}

/// A gradient the pass does not compress. Without momentum correction it
/// stays a dense all-reduce. With it the velocity must live in the runtime
/// for every gradient (the step's optimizer is plain SGD): a gradient
/// all-reduce becomes the recipe's dense call; one that cannot is an error.
FailureOr<Decision>
ScaleComRewritePass::keepDense(Operation *op, const RewriteDecision &shared,
                               Decision decision) {
  if (momentum == 0.0 || !shared.use.isGradient)
    return decision;
  auto why = [&]() -> std::optional<std::string> {
    if (std::optional<std::string> structural = whyNotRewritable(op))
      return structural;
    Type element =
        cast<RankedTensorType>(reducedInput(op).getType()).getElementType();
    if (!element.isF32() && !element.isBF16() && !element.isF16())
      return std::string("its element type is not f32, bf16 or f16");
    return std::nullopt;
  }();
  if (why)
    return op->emitError()
           << kPass
           << ": momentum correction needs every gradient's velocity in the "
              "runtime, but this gradient cannot go through the recipe's "
              "call: "
           << *why
           << "; export the step with the optimizer's own momentum and "
              "drop 'momentum'";
  auto type = cast<RankedTensorType>(reducedInput(op).getType());
  decision.compress = true;
  decision.denseWithMomentum = true;
  decision.plan.k = type.getNumElements();
  decision.plan.beta = beta;
  decision.plan.selection = Selection::Exact;
  decision.reason = "left dense (" + decision.reason +
                    "), through the recipe's dense call for its velocity";
  return decision;
}

/// Momentum correction replaces the optimizer's momentum: a step whose
/// optimizer keeps its own state from the gradient would apply momentum
/// twice (or Adam's moments to a velocity).
LogicalResult ScaleComRewritePass::checkPlainSgd(Operation *op,
                                                 const Decision &decision) {
  if (momentum == 0.0 || !decision.compress)
    return success();
  int64_t updates = countReturnedUpdates(op->getResult(0));
  if (updates <= 1)
    return success();
  return op->emitError()
         << kPass << ": momentum correction needs a step exported with plain "
         << "SGD, but this gradient reaches " << updates
         << " returned values (the optimizer keeps state of its own: a "
            "momentum buffer or Adam's moments); export with momentum 0, or "
            "drop 'momentum'";
}

void ScaleComRewritePass::rewrite(Operation *op, const Decision &decision,
                                  SymbolTable &symbolTable) {
  MLIRContext *ctx = &getContext();
  Value input = reducedInput(op);
  auto type = cast<RankedTensorType>(input.getType());
  auto allReduce = dyn_cast<shard::AllReduceOp>(op);
  auto reduceScatter = dyn_cast<shard::ReduceScatterOp>(op);
  FlatSymbolRefAttr grid =
      allReduce ? allReduce.getGridAttr() : reduceScatter.getGridAttr();
  DenseI16ArrayAttr gridAxes =
      allReduce ? allReduce.getGridAxesAttr() : reduceScatter.getGridAxesAttr();
  shard::ReductionKind kind =
      allReduce ? allReduce.getReduction() : reduceScatter.getReduction();
  const CompressionPlan &plan = decision.plan;

  // State named after the parameter it serves; SymbolTable::insert makes it
  // unique in the module.
  std::string base;
  if (decision.parameter) {
    base = parameterName(decision.parameter);
  } else {
    auto func = op->getParentOfType<FunctionOpInterface>();
    base = (func ? func.getName().str() : std::string("module")) +
           (allReduce ? "_all_reduce" : "_reduce_scatter");
  }
  // Created unattached, then placed with the other declarations.
  OpBuilder declarationBuilder(ctx);
  // The memory is f32 whatever the gradient's type (16-bit gradients'
  // values travel in 16 bits; what stays behind is kept exactly).
  auto state = StateOp::create(
      declarationBuilder, op->getLoc(), sanitizeSymbolName(base + "_grad"),
      TypeAttr::get(type.clone(Float32Type::get(ctx))));
  insertDeclaration(symbolTable, state);
  auto stateRef = FlatSymbolRefAttr::get(state.getSymNameAttr());

  OpBuilder b(op);
  Reduction reduction = kind == shard::ReductionKind::Average
                            ? Reduction::Average
                            : Reduction::Sum;
  Location loc = op->getLoc();
  Value replacement;
  if (compressor == "local-topk") {
    // decide() kept reduce-scatters away from local-topk.
    replacement = LocalTopkAllGatherOp::create(
        b, loc, type, input, stateRef, grid, gridAxes,
        b.getI64IntegerAttr(plan.k), ReductionAttr::get(ctx, reduction));
  } else {
    auto valuesType = RankedTensorType::get({plan.k}, b.getF32Type());
    auto indicesType = RankedTensorType::get({plan.k}, b.getI64Type());
    IntegerAttr chunkAttr =
        plan.chunkSize ? b.getI64IntegerAttr(*plan.chunkSize) : IntegerAttr();
    // The recipe's attributes, where set (docs/scalecom.md, "The recipe").
    // A dense call has no warm-up to make.
    const bool dense = decision.denseWithMomentum;
    IntegerAttr warmupAttr = recipeWarmupSteps && !dense
                                 ? b.getI64IntegerAttr(recipeWarmupSteps)
                                 : IntegerAttr();
    FloatAttr rampAttr = recipeWarmupSteps && !dense && warmup == "ramp"
                             ? b.getF32FloatAttr(warmupStartRatio)
                             : FloatAttr();
    FloatAttr clipAttr = clip > 0.0 ? b.getF32FloatAttr(clip) : FloatAttr();
    FloatAttr momentumAttr =
        momentum > 0.0 ? b.getF32FloatAttr(momentum) : FloatAttr();
    auto compress = CltkCompressOp::create(
        b, loc, valuesType, indicesType, input, stateRef, grid, gridAxes,
        b.getI64IntegerAttr(plan.k), SelectionAttr::get(ctx, plan.selection),
        chunkAttr, warmupAttr, rampAttr, clipAttr, momentumAttr,
        nesterov ? b.getUnitAttr() : UnitAttr(),
        dense ? b.getUnitAttr() : UnitAttr());
    Operation *reduce;
    if (allReduce)
      reduce = SparseAllReduceOp::create(b, loc, type, compress.getValues(),
                                         compress.getIndices(), grid, gridAxes,
                                         ReductionAttr::get(ctx, reduction));
    else
      reduce = SparseReduceScatterOp::create(
          b, loc, reduceScatter.getResult().getType(), compress.getValues(),
          compress.getIndices(), grid, gridAxes,
          ReductionAttr::get(ctx, reduction),
          reduceScatter.getScatterAxisAttr());
    // The name the runtime reports this reduction under.
    reduce->setAttr(attr::kRuntimeName,
                    b.getStringAttr(state.getSymName() + "_reduce"));
    replacement = reduce->getResult(0);
    MemoryUpdateOp::create(b, loc, input, compress.getIndices(), stateRef,
                           b.getF64FloatAttr(plan.beta));
  }

  if (report && decision.denseWithMomentum)
    op->emitRemark() << "gradcomm-scalecom: " << decision.reason << ", state @"
                     << state.getSymName();
  else if (report)
    op->emitRemark() << "gradcomm-scalecom: compressed " << type
                     << " with k = " << plan.k << " of "
                     << type.getNumElements()
                     << ", selection = " << stringifySelection(plan.selection)
                     << (plan.chunkSize ? ", chunk_size = " +
                                              std::to_string(*plan.chunkSize)
                                        : std::string())
                     << ", beta = " << formatNumber(plan.beta) << ", state @"
                     << state.getSymName()
                     << (decision.reason.empty() ? "" : "; ")
                     << decision.reason;
  op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
}

void ScaleComRewritePass::runOnOperation() {
  if (failed(validateOptions()))
    return signalPassFailure();
  ModuleOp module = getOperation();
  // Gradient all-reduces (data parallelism) and reduce-scatters (sharded
  // data parallelism), in program order.
  SmallVector<Operation *> reductions;
  module.walk([&](Operation *op) {
    if (isa<shard::AllReduceOp, shard::ReduceScatterOp>(op))
      reductions.push_back(op);
  });

  SymbolTable symbolTable(module);
  bool failedAny = false;
  for (Operation *op : reductions) {
    FailureOr<Decision> decision = decide(op);
    if (failed(decision) || failed(checkPlainSgd(op, *decision))) {
      failedAny = true;
      continue;
    }
    if (!decision->compress) {
      if (report)
        op->emitRemark() << "gradcomm-scalecom: left dense: "
                         << decision->reason;
      continue;
    }
    rewrite(op, *decision, symbolTable);
  }
  if (failedAny)
    signalPassFailure();
}
