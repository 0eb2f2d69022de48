//===- gradcomm-plan.cpp - Predicted communication cost of a step ---------===//
//
// Part of the GradComm project.
//
// Reads an SPMD training step (before the strategy rewrite: its gradient
// all-reduces are shard.all_reduce ops, the reduce-scatters of sharded
// training shard.reduce_scatter ones) and a cluster (flags or a calibration
// file), and prints, per reduction and in total, the time and bytes each
// strategy is predicted to take per step (docs/scaling.md).
//
//===----------------------------------------------------------------------===//

#include "Simulate.h"
#include "gradcomm/Analysis/CostModel.h"
#include "gradcomm/InitAll.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;

cl::OptionCategory planCategory("gradcomm-plan options");
static cl::OptionCategory &category = planCategory;
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<step.mlir>"),
                                      cl::init("-"), cl::cat(category));
static cl::opt<std::string>
    calibration("calibration",
                cl::desc("A calibration file (`key = value` lines: ranks, "
                         "latency, bandwidth, memory_bandwidth); flags "
                         "given beside it win"),
                cl::cat(category));
static cl::opt<int64_t> ranks("ranks", cl::desc("Ranks (default 4)"),
                              cl::init(0), cl::cat(category));
static cl::opt<std::string>
    bandwidth("bandwidth",
              cl::desc("Link bandwidth per rank, e.g. 10Gbit, 1Gbit, "
                       "125MB/s (default 10Gbit)"),
              cl::cat(category));
static cl::opt<std::string>
    latency("latency", cl::desc("Per-message latency, e.g. 5us (default)"),
            cl::cat(category));
static cl::opt<std::string> memoryBandwidth(
    "memory-bandwidth",
    cl::desc("Memory bandwidth of one rank for the kernels (default 20GB)"),
    cl::cat(category));
static cl::list<int64_t>
    ratios("ratio",
           cl::desc("Compression ratios to predict (default 100,1000)"),
           cl::CommaSeparated, cl::cat(category));
static cl::list<int64_t>
    autoRatios("auto-ratios",
               cl::desc("Candidate ratios of the policy=auto column (default "
                        "10,100,400, as gradcomm-scalecom's)"),
               cl::CommaSeparated, cl::cat(category));
static cl::opt<double> autoTolerance(
    "auto-tolerance",
    cl::desc("policy=auto: the least compressed candidate within this "
             "fraction of the fastest wins (default 0.05)"),
    cl::init(0.05), cl::cat(category));
static cl::opt<bool> chunkSelection(
    "chunk",
    cl::desc("Price ScaleCom's chunk selection (selection=chunk) instead of "
             "the exact top-k, gradcomm-scalecom's default"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> simulateSteps(
    "simulate",
    cl::desc("Replay the step's communication on --sweep-ranks ranks with "
             "stragglers (the options marked --simulate) instead of the "
             "per-tensor table"),
    cl::init(false), cl::cat(category));
static cl::opt<int64_t> period("period",
                               cl::desc("EASGD period in steps (default 4)"),
                               cl::init(4), cl::cat(category));

namespace {

struct Tensor {
  std::string label;
  int64_t elements;
  /// 2: bf16 or f16, sent in 16 bits where the strategy can.
  int64_t valueBytes;
  /// A reduce-scatter (sharded training): dense and ScaleCom have their
  /// reduce-scatter forms, the other strategies none.
  bool sharded;
};

/// A strategy's prediction for a tensor, or none where it has no form for
/// it (a reduce-scatter).
struct Strategy {
  std::string name;
  std::function<std::optional<gradcomm::Prediction>(
      const gradcomm::ClusterModel &, const Tensor &)>
      predict;
};

FailureOr<gradcomm::ClusterModel> clusterFromFlags() {
  if (ranks.getNumOccurrences() && ranks < 1) {
    llvm::errs() << "gradcomm-plan: --ranks must be at least 1, got " << ranks
                 << "\n";
    return failure();
  }
  gradcomm::ClusterSpec spec{calibration, ranks, bandwidth, latency,
                             memoryBandwidth};
  llvm::Expected<gradcomm::ClusterModel> model =
      gradcomm::buildClusterModel(spec);
  if (!model) {
    llvm::errs() << "gradcomm-plan: " << llvm::toString(model.takeError())
                 << "\n";
    return failure();
  }
  return *model;
}

/// The step's gradient reductions (all-reduces, and the reduce-scatters of
/// sharded training, by their whole input), in program order; fails
/// (diagnosed) on one whose size is not static.
FailureOr<std::vector<Tensor>> allReduces(ModuleOp module) {
  std::vector<Tensor> tensors;
  WalkResult walk = module.walk([&](Operation *op) {
    if (!isa<shard::AllReduceOp, shard::ReduceScatterOp>(op))
      return WalkResult::advance();
    Type reduced = op->getOperand(0).getType();
    auto type = dyn_cast<RankedTensorType>(reduced);
    if (!type || !type.hasStaticShape()) {
      op->emitError("gradcomm-plan needs static shapes; this reduction has ")
          << reduced;
      return WalkResult::interrupt();
    }
    std::string label = llvm::formatv("#{0}", tensors.size()).str();
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      label = name.getName().str();
    Type element = type.getElementType();
    tensors.push_back({label, type.getNumElements(),
                       element.isBF16() || element.isF16() ? 2 : 4,
                       isa<shard::ReduceScatterOp>(op)});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return tensors;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "gradcomm-plan: predicted communication time and bytes per step of "
      "each GradComm strategy on a cluster (docs/scaling.md)\n");
  FailureOr<gradcomm::ClusterModel> cluster = clusterFromFlags();
  if (failed(cluster))
    return 1;
  if (period < 1) {
    llvm::errs() << "gradcomm-plan: --period must be at least 1, got " << period
                 << "\n";
    return 1;
  }
  std::vector<int64_t> compression(ratios.begin(), ratios.end());
  if (compression.empty())
    compression = {100, 1000};
  for (int64_t ratio : compression)
    if (ratio < 1) {
      llvm::errs() << "gradcomm-plan: --ratio must be at least 1, got " << ratio
                   << "\n";
      return 1;
    }
  std::vector<int64_t> candidates(autoRatios.begin(), autoRatios.end());
  if (candidates.empty())
    candidates = {10, 100, 400};
  for (int64_t ratio : candidates)
    if (ratio < 2) {
      llvm::errs() << "gradcomm-plan: --auto-ratios must be at least 2, got "
                   << ratio << "\n";
      return 1;
    }
  if (!(autoTolerance >= 0 && autoTolerance < 1)) {
    llvm::errs() << "gradcomm-plan: --auto-tolerance must be in [0, 1), got "
                 << autoTolerance << "\n";
    return 1;
  }

  DialectRegistry registry;
  gradcomm::registerAllGradCommDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "gradcomm-plan: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  FailureOr<std::vector<Tensor>> tensors = allReduces(*module);
  if (failed(tensors))
    return 1;
  if (tensors->empty()) {
    llvm::errs() << "gradcomm-plan: no shard.all_reduce or "
                    "shard.reduce_scatter in "
                 << inputFile
                 << ": it reads a step before the strategy rewrite\n";
    return 1;
  }

  if (simulateSteps) {
    std::vector<int64_t> sizes;
    for (const Tensor &tensor : *tensors)
      sizes.push_back(tensor.elements);
    return gradcomm::runSimulation(*cluster, sizes);
  }

  // Dense and ScaleCom send a 16-bit tensor's values in 16 bits and have
  // reduce-scatter forms; the other strategies' models count float32
  // values and have none.
  std::vector<Strategy> strategies = {
      {"dense", [](const gradcomm::ClusterModel &m, const Tensor &t) {
         return t.sharded ? gradcomm::predictReduceScatter(m, t.elements,
                                                           t.valueBytes)
                          : gradcomm::predictDense(m, t.elements, t.valueBytes);
       }}};
  for (int64_t ratio : compression)
    strategies.push_back(
        {llvm::formatv("scalecom-r{0}", ratio).str(),
         [ratio](const gradcomm::ClusterModel &m, const Tensor &t) {
           return t.sharded
                      ? gradcomm::predictScaleComReduceScatter(
                            m, t.elements, ratio, !chunkSelection, t.valueBytes)
                      : gradcomm::predictScaleCom(m, t.elements, ratio,
                                                  !chunkSelection,
                                                  t.valueBytes);
         }});
  // Replicated only: none where the tensor is a reduce-scatter.
  auto replicated = [](auto predict) {
    return [predict](const gradcomm::ClusterModel &m,
                     const Tensor &t) -> std::optional<gradcomm::Prediction> {
      if (t.sharded)
        return std::nullopt;
      return predict(m, t.elements);
    };
  };
  for (int64_t ratio : compression)
    strategies.push_back(
        {llvm::formatv("local-topk-r{0}", ratio).str(),
         replicated([ratio](const gradcomm::ClusterModel &m, int64_t n) {
           return gradcomm::predictLocalTopk(m, n, ratio);
         })});
  strategies.push_back(
      {"gossip", replicated([](const gradcomm::ClusterModel &m, int64_t n) {
         return gradcomm::predictGossip(m, n);
       })});
  strategies.push_back(
      {llvm::formatv("easgd-p{0}", int64_t(period)).str(),
       replicated([](const gradcomm::ClusterModel &m, int64_t n) {
         return gradcomm::predictEasgd(m, n, period);
       })});

  llvm::raw_ostream &os = llvm::outs();
  const gradcomm::ClusterModel &model = *cluster;
  os << llvm::formatv("cluster: {0} ranks, latency {1:f2} us, link {2:f3} "
                      "GB/s, memory {3:f3} GB/s\n",
                      model.ranks, model.latencySeconds * 1e6,
                      model.linkBytesPerSecond / 1e9,
                      model.memoryBytesPerSecond / 1e9);
  os << "predicted milliseconds per step (communication and kernels, not "
        "overlapped)\n";
  os << llvm::formatv("{0,-24} {1,12}", "tensor", "elements");
  for (const Strategy &strategy : strategies)
    os << llvm::formatv(" {0,16}", strategy.name);
  os << llvm::formatv(" {0,16} {1}\n", "auto", "choice");
  std::vector<gradcomm::Prediction> totals(strategies.size());
  // A strategy without a form for some tensor has no total.
  std::vector<bool> complete(strategies.size(), true);
  gradcomm::Prediction automatic;
  // The all-reduces policy=auto leaves dense: separately, and in one bucket
  // (gradcomm-compile --bucket-elements).
  double leftDenseSeconds = 0;
  int64_t leftDenseElements = 0, leftDenseCount = 0;
  bool anySharded = false;
  for (const Tensor &tensor : *tensors) {
    anySharded |= tensor.sharded;
    os << llvm::formatv("{0,-24} {1,12}",
                        tensor.label + (tensor.sharded ? " [rs]" : ""),
                        tensor.elements);
    for (auto [i, strategy] : llvm::enumerate(strategies)) {
      std::optional<gradcomm::Prediction> p = strategy.predict(model, tensor);
      if (!p) {
        complete[i] = false;
        os << llvm::formatv(" {0,16}", "n/a");
        continue;
      }
      totals[i].seconds += p->seconds;
      totals[i].bytesSent += p->bytesSent;
      os << llvm::formatv(" {0,16:f4}", p->seconds * 1e3);
    }
    gradcomm::CompressionChoice choice = gradcomm::chooseCompression(
        model, tensor.elements, candidates, autoTolerance, !chunkSelection,
        tensor.sharded, tensor.valueBytes);
    automatic.seconds += choice.chosen.seconds;
    automatic.bytesSent += choice.chosen.bytesSent;
    if (choice.ratio == 0 && !tensor.sharded) {
      leftDenseSeconds += choice.dense.seconds;
      leftDenseElements += tensor.elements;
      leftDenseCount += 1;
    }
    os << llvm::formatv(" {0,16:f4} {1}\n", choice.chosen.seconds * 1e3,
                        choice.ratio
                            ? "scalecom-r" + std::to_string(choice.ratio)
                            : std::string("dense"));
  }
  int64_t elements = 0;
  for (const Tensor &tensor : *tensors)
    elements += tensor.elements;
  // A total row: each strategy's (or n/a), then policy=auto's.
  auto totalRow = [&](const std::string &label, const std::string &count,
                      auto value) {
    os << llvm::formatv("{0,-24} {1,12}", label, count);
    for (auto [i, total] : llvm::enumerate(totals)) {
      if (complete[i])
        os << llvm::formatv(" {0,16:f4}", value(total));
      else
        os << llvm::formatv(" {0,16}", "n/a");
    }
    os << llvm::formatv(" {0,16:f4}\n", value(automatic));
  };
  totalRow("total", std::to_string(elements),
           [](const gradcomm::Prediction &p) { return p.seconds * 1e3; });
  totalRow("MB sent per rank", "",
           [](const gradcomm::Prediction &p) { return p.bytesSent / 1e6; });
  if (anySharded)
    os << "[rs]: a reduce-scatter (sharded training): dense and ScaleCom in "
          "their reduce-scatter forms; local top-k, gossip and EASGD have "
          "none (n/a)\n";
  size_t best = 0;
  for (size_t i = 1; i < totals.size(); ++i)
    if (complete[i] && totals[i].seconds < totals[best].seconds)
      best = i;
  auto ofDense = [&](double seconds) {
    return totals[0].seconds > 0 ? seconds / totals[0].seconds : 1.0;
  };
  os << llvm::formatv("fastest: {0} ({1:f2}x dense's predicted time)\n",
                      strategies[best].name, ofDense(totals[best].seconds));
  os << llvm::formatv("policy=auto (dense or ScaleCom per tensor): {0:f2}x "
                      "dense's predicted time\n",
                      ofDense(automatic.seconds));
  if (leftDenseCount > 1) {
    const double bucketed =
        gradcomm::predictDense(model, leftDenseElements).seconds;
    os << llvm::formatv(
        "policy=auto leaves {0} tensors dense ({1} elements): {2:f4} ms "
        "separately, {3:f4} ms in one bucket (--bucket-elements={1}); with "
        "it {4:f2}x dense's predicted time\n",
        leftDenseCount, leftDenseElements, leftDenseSeconds * 1e3,
        bucketed * 1e3,
        ofDense(automatic.seconds - leftDenseSeconds + bucketed));
  }
  return 0;
}
