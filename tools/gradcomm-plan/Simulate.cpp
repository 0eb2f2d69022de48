//===- Simulate.cpp - gradcomm-plan --simulate ----------------------------===//
//
// Part of the GradComm project.
//
// The step's gradients replayed by lib/Analysis/Simulator for 2 to 1024
// ranks (docs/scaling.md, "Simulation").
//
//===----------------------------------------------------------------------===//

#include "Simulate.h"

#include "gradcomm/Analysis/Simulator.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::gradcomm;
namespace cl = llvm::cl;

extern cl::OptionCategory planCategory;

static cl::list<int64_t>
    sweepRanks("sweep-ranks",
               cl::desc("--simulate: rank counts (default 2,4,8,...,1024)"),
               cl::CommaSeparated, cl::cat(planCategory));
static cl::list<std::string> strategyNames(
    "strategies",
    cl::desc("--simulate: dense, scalecom-rR (chunk selection), "
             "scalecom-rR-exact, local-topk-rR, gossip (the matching "
             "schedule), gossip-ring, gossip-hypercube, gossip-async (the "
             "random schedule), easgd-pP, easgd-async-pP (default: dense, "
             "scalecom-r100, local-topk-r100, gossip, gossip-async, "
             "easgd-p4, easgd-async-p4)"),
    cl::CommaSeparated, cl::cat(planCategory));
static cl::opt<double>
    computeMs("compute-ms",
              cl::desc("--simulate: compute time of one step (default 50)"),
              cl::init(50), cl::cat(planCategory));
static cl::opt<double> stragglerRate(
    "straggler-rate",
    cl::desc("--simulate: probability that a rank is slow in a step "
             "(default 0)"),
    cl::init(0), cl::cat(planCategory));
static cl::opt<double>
    stragglerFactor("straggler-factor",
                    cl::desc("--simulate: how much slower (default 4)"),
                    cl::init(4), cl::cat(planCategory));
static cl::opt<int64_t> steps("steps",
                              cl::desc("--simulate: steps (default 100)"),
                              cl::init(100), cl::cat(planCategory));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("--simulate: seed of the stragglers "
                                       "and peers (default 1)"),
                              cl::init(1), cl::cat(planCategory));
static cl::opt<double> topkOverlap(
    "topk-overlap",
    cl::desc("--simulate: fraction of a rank's top-k another rank also "
             "chose (default 0.04, gradcomm-validate-model's)"),
    cl::init(0.04), cl::cat(planCategory));
static cl::opt<bool> noAgreement(
    "no-agreement",
    cl::desc("--simulate: the runtime's consistency check off (synchronous "
             "gossip then waits for its peer only)"),
    cl::init(false), cl::cat(planCategory));
static cl::opt<std::string>
    csvFile("csv", cl::desc("--simulate: also write the results as CSV"),
            cl::cat(planCategory));

namespace {

bool fail(const llvm::Twine &message) {
  llvm::errs() << "gradcomm-plan: " << message << "\n";
  return false;
}

bool validOptions() {
  if (steps < 1)
    return fail("--steps must be at least 1");
  if (!(computeMs >= 0))
    return fail("--compute-ms must be >= 0");
  if (!(stragglerRate >= 0 && stragglerRate <= 1))
    return fail("--straggler-rate must be in [0, 1]");
  if (!(stragglerFactor >= 1))
    return fail("--straggler-factor must be >= 1");
  if (!(topkOverlap >= 0 && topkOverlap <= 1))
    return fail("--topk-overlap must be in [0, 1]");
  for (int64_t n : sweepRanks)
    if (n < 1 || n > (int64_t(1) << 20))
      return fail(llvm::formatv("--sweep-ranks: {0} is not in [1, 2^20]", n));
  return true;
}

} // namespace

int mlir::gradcomm::runSimulation(const ClusterModel &cluster,
                                  ArrayRef<int64_t> tensors) {
  if (!validOptions())
    return 1;
  std::vector<int64_t> rankCounts(sweepRanks.begin(), sweepRanks.end());
  if (rankCounts.empty())
    for (int64_t n = 2; n <= 1024; n *= 2)
      rankCounts.push_back(n);
  std::vector<std::string> names(strategyNames.begin(), strategyNames.end());
  if (names.empty())
    names = {"dense",        "scalecom-r100", "local-topk-r100", "gossip",
             "gossip-async", "easgd-p4",      "easgd-async-p4"};
  std::vector<SimulatedStrategy> strategies;
  for (const std::string &name : names) {
    llvm::Expected<SimulatedStrategy> strategy = parseSimulatedStrategy(name);
    if (!strategy) {
      fail("--strategies: " + llvm::toString(strategy.takeError()));
      return 1;
    }
    strategies.push_back(*strategy);
  }
  for (int64_t n : rankCounts)
    for (const SimulatedStrategy &strategy : strategies)
      if (llvm::Error refused = checkSimulatable(strategy, n)) {
        fail("--strategies: " + llvm::toString(std::move(refused)));
        return 1;
      }
  SimulationConfig config;
  config.tensors.assign(tensors.begin(), tensors.end());
  config.computeSeconds = computeMs / 1e3;
  config.stragglerRate = stragglerRate;
  config.stragglerFactor = stragglerFactor;
  config.steps = steps;
  config.seed = seed;
  config.topkOverlap = topkOverlap;

  std::unique_ptr<llvm::raw_fd_ostream> csv;
  if (!csvFile.empty()) {
    std::error_code error;
    csv = std::make_unique<llvm::raw_fd_ostream>(csvFile, error,
                                                 llvm::sys::fs::OF_Text);
    if (error) {
      fail("--csv: cannot write " + csvFile + ": " + error.message());
      return 1;
    }
    *csv << "ranks,strategy,ms_per_step,mb_per_step,wait_ms_per_step,"
            "density_over_k\n";
  }

  llvm::raw_ostream &os = llvm::outs();
  os << llvm::formatv(
      "simulated: {0} steps of {1:f1} ms compute, stragglers {2} at {3}x, "
      "seed {4}, agreement {5}; latency {6:f2} us, link {7:f3} GB/s\n",
      int64_t(steps), double(computeMs), double(stragglerRate),
      double(stragglerFactor), uint64_t(seed), noAgreement ? "off" : "on",
      cluster.latencySeconds * 1e6, cluster.linkBytesPerSecond / 1e9);
  std::vector<std::vector<SimulationResult>> results;
  for (int64_t n : rankCounts) {
    ClusterModel model = cluster;
    model.ranks = n;
    results.emplace_back();
    for (const SimulatedStrategy &strategy : strategies)
      results.back().push_back(simulate(model, strategy, config, !noAgreement));
  }
  auto table = [&](StringRef title, auto value, StringRef format) {
    os << title << "\n" << llvm::formatv("{0,6}", "ranks");
    for (const SimulatedStrategy &strategy : strategies)
      os << llvm::formatv(" {0,15}", strategy.name);
    os << "\n";
    for (auto [row, n] : llvm::enumerate(rankCounts)) {
      os << llvm::formatv("{0,6}", n);
      for (const SimulationResult &result : results[row])
        os << " " << llvm::formatv(format.data(), value(result));
      os << "\n";
    }
  };
  table(
      "ms per step (mean over ranks)",
      [](const SimulationResult &r) { return r.secondsPerStep * 1e3; },
      "{0,15:f3}");
  table(
      "MB sent per rank per step",
      [](const SimulationResult &r) { return r.bytesPerStep / 1e6; },
      "{0,15:f4}");
  table(
      "ms a rank waits per step (for its group, peer or a link)",
      [](const SimulationResult &r) { return r.waitPerStep * 1e3; },
      "{0,15:f3}");
  table(
      "non-zeros of the summed gradient / k",
      [](const SimulationResult &r) { return r.densityOverK; }, "{0,15:f2}");
  os << "fastest per step:";
  for (auto [row, n] : llvm::enumerate(rankCounts)) {
    size_t best = 0;
    for (size_t i = 1; i < strategies.size(); ++i)
      if (results[row][i].secondsPerStep < results[row][best].secondsPerStep)
        best = i;
    os << llvm::formatv(" {0}:{1}", n, strategies[best].name);
  }
  os << "\n";
  if (csv)
    for (auto [row, n] : llvm::enumerate(rankCounts))
      for (auto [i, strategy] : llvm::enumerate(strategies)) {
        const SimulationResult &r = results[row][i];
        *csv << llvm::formatv("{0},{1},{2:f6},{3:f6},{4:f6},{5:f4}\n", n,
                              strategy.name, r.secondsPerStep * 1e3,
                              r.bytesPerStep / 1e6, r.waitPerStep * 1e3,
                              r.densityOverK);
      }
  return 0;
}
