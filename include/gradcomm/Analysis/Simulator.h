//===- Simulator.h - Replay of a step's communication ----------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Replays the communication of training steps on n ranks with the cost
// model's times: per-rank clocks, compute with stragglers, collectives that
// wait for their group, one-sided pushes that contend for the receiver's
// link, and an asynchronous EASGD center whose links serve one request at a
// time. docs/scaling.md says what it assumes and what it reproduces.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_ANALYSIS_SIMULATOR_H
#define GRADCOMM_ANALYSIS_SIMULATOR_H

#include "gradcomm/Analysis/CostModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir::gradcomm {

/// How a simulated strategy communicates.
enum class SimulatedKind {
  Dense,         // all-reduce of every gradient, every step
  ScaleCom,      // index broadcast + value all-reduce (ratio)
  LocalTopk,     // all-gather of k values and indices per rank (ratio)
  Gossip,        // synchronous pairwise exchange with the schedule's peer
  GossipAsync,   // push to a random peer's mailbox, never wait (one-sided)
  Easgd,         // all-reduce every `period` steps
  EasgdAsync,    // read and accumulate the center on rank 0 every `period`
  ReduceScatter, // sharded: reduce-scatter of every gradient
  ScaleComReduceScatter, // sharded: index broadcast + value reduce-scatter
};

/// Synchronous gossip's peer schedule, as the runtime's gradcomm_schedule
/// (the same values; the peers come from the runtime's own schedule).
enum class SimulatedSchedule { Matching = 0, Ring = 1, Hypercube = 2 };

struct SimulatedStrategy {
  std::string name;
  SimulatedKind kind = SimulatedKind::Dense;
  int64_t ratio = 100;
  int64_t period = 1;
  /// ScaleCom: the leader's exact top-k instead of the chunk path.
  bool exactSelection = false;
  /// Gossip: the gossip rewrite's default schedule unless the name says.
  SimulatedSchedule schedule = SimulatedSchedule::Matching;
};

/// Parses "dense", "scalecom-r100" (chunk selection), "scalecom-r100-exact",
/// "local-topk-r100", "gossip" (the matching schedule), "gossip-ring",
/// "gossip-hypercube", "gossip-async", "easgd-p4", "easgd-async-p4", and for
/// sharded training "reduce-scatter", "scalecom-rs-r100" and
/// "scalecom-rs-r100-exact".
llvm::Expected<SimulatedStrategy> parseSimulatedStrategy(StringRef name);

struct SimulationConfig {
  /// Float32 elements of each gradient (one message each).
  SmallVector<int64_t> tensors;
  /// Compute time of one step on a rank that is not slowed.
  double computeSeconds = 0.05;
  /// Each rank, each step, independently: slowed by `stragglerFactor` with
  /// probability `stragglerRate`.
  double stragglerRate = 0;
  double stragglerFactor = 1;
  int64_t steps = 100;
  uint64_t seed = 1;
  /// Local top-k: the fraction of a rank's k indices that another rank
  /// also chose (measured by gradcomm-validate-model); the summed gradient
  /// has about k (1 + (n - 1)(1 - overlap)) non-zeros.
  double topkOverlap = 0;
};

struct SimulationResult {
  /// Mean over ranks of (time to finish `steps`) / steps.
  double secondsPerStep = 0;
  /// Bytes one rank sends per step, mean over ranks and steps.
  double bytesPerStep = 0;
  /// Local top-k: distinct non-zeros of the summed gradient over k (1 for
  /// the others: ScaleCom's leader indices are shared).
  double densityOverK = 1;
  /// Mean seconds a rank waited per step (for peers, a group or a link).
  double waitPerStep = 0;
};

/// Fails, with the runtime's reason, where the runtime would refuse
/// `strategy` on `ranks` ranks (the hypercube schedule on a group that is
/// not a power of two).
llvm::Error checkSimulatable(const SimulatedStrategy &strategy, int64_t ranks);

/// Replays `config.steps` steps of `strategy` on `model.ranks` ranks.
/// `agreement`: every synchronous call joins the runtime's agreement (an
/// all-reduce over all ranks; the runtime's default), so synchronous
/// gossip also waits for the whole group, not only for its peer. Only for
/// what checkSimulatable accepts.
SimulationResult simulate(const ClusterModel &model,
                          const SimulatedStrategy &strategy,
                          const SimulationConfig &config, bool agreement);

} // namespace mlir::gradcomm

#endif // GRADCOMM_ANALYSIS_SIMULATOR_H
