//===- Simulator.cpp - Discrete-event replay of a step's communication ----===//
//
// Part of the GradComm project.
//
// Every rank has a clock. A step is compute (slowed for a straggler) and
// then the strategy's communication, timed by the cost model:
//  * synchronous collectives start when the last rank of the group is
//    ready (every runtime call joins the agreement, an all-reduce over all
//    ranks, unless the consistency check is off: then synchronous gossip
//    waits for its peer only);
//  * one-sided operations (asynchronous gossip and EASGD) never wait for a
//    peer, but a message occupies the receiving (or sending) rank's link:
//    pushes that meet at one rank queue there, and the EASGD center's two
//    links serve one worker at a time. Those are resolved in time order
//    with a priority queue of the ranks' ready times.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Analysis/Simulator.h"

// The runtime's peer schedules (header-only, runtime/src/kernels): the
// simulated exchanges are the ones the runtime makes.
#include "Schedule.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <vector>

using namespace mlir;
using namespace mlir::gradcomm;

namespace {

/// splitmix64 of (seed, rank, step, salt): the same stream on every run.
double uniform(uint64_t seed, int64_t rank, int64_t step, uint64_t salt) {
  uint64_t x = seed ^ (uint64_t(rank) * 0x9e3779b97f4a7c15ull) ^
               (uint64_t(step) * 0xbf58476d1ce4e5b9ull) ^
               (salt * 0x94d049bb133111ebull);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

double computeSeconds(const SimulationConfig &config, int64_t rank,
                      int64_t step) {
  const bool slow = uniform(config.seed, rank, step, 1) < config.stragglerRate;
  return config.computeSeconds * (slow ? config.stragglerFactor : 1.0);
}

static_assert(static_cast<int>(SimulatedSchedule::Matching) ==
                      GRADCOMM_SCHEDULE_MATCHING &&
                  static_cast<int>(SimulatedSchedule::Ring) ==
                      GRADCOMM_SCHEDULE_RING &&
                  static_cast<int>(SimulatedSchedule::Hypercube) ==
                      GRADCOMM_SCHEDULE_HYPERCUBE,
              "SimulatedSchedule and gradcomm_schedule disagree");

gradcomm_schedule runtimeSchedule(SimulatedSchedule schedule) {
  return static_cast<gradcomm_schedule>(schedule);
}

/// The runtime's peer of `rank` at `step` (-1: it sits out this step).
int64_t peerOf(gradcomm_schedule schedule, uint64_t seed, int64_t rank,
               int64_t ranks, int64_t step) {
  return ::gradcomm::schedulePeer(schedule, seed, static_cast<uint64_t>(step),
                                  static_cast<int>(rank),
                                  static_cast<int>(ranks));
}

/// What one step of a synchronous strategy costs, and sends, per rank.
Prediction synchronousStep(const ClusterModel &model,
                           const SimulatedStrategy &strategy,
                           const SimulationConfig &config, int64_t step) {
  Prediction total;
  for (int64_t elements : config.tensors) {
    Prediction p;
    switch (strategy.kind) {
    case SimulatedKind::Dense:
      p = predictDense(model, elements);
      break;
    case SimulatedKind::ScaleCom:
      p = predictScaleCom(model, elements, strategy.ratio,
                          strategy.exactSelection);
      break;
    case SimulatedKind::LocalTopk:
      p = predictLocalTopk(model, elements, strategy.ratio);
      break;
    case SimulatedKind::ReduceScatter:
      p = predictReduceScatter(model, elements);
      break;
    case SimulatedKind::ScaleComReduceScatter:
      p = predictScaleComReduceScatter(model, elements, strategy.ratio,
                                       strategy.exactSelection);
      break;
    case SimulatedKind::Easgd:
      // An exchange every `period` steps; the agreement on every call.
      if (step % strategy.period == 0)
        p = predictEasgd(model, elements, 1);
      else
        p.seconds = agreementSeconds(model);
      break;
    default:
      break;
    }
    total.seconds += p.seconds;
    total.bytesSent += p.bytesSent;
  }
  return total;
}

/// Every rank's ready time after this step's compute; returns the latest.
double computePhase(const SimulationConfig &config, int64_t step,
                    const std::vector<double> &clock,
                    std::vector<double> &ready) {
  double last = 0;
  for (size_t i = 0; i < clock.size(); ++i) {
    ready[i] = clock[i] + computeSeconds(config, i, step);
    last = std::max(last, ready[i]);
  }
  return last;
}

/// Per-step means from the final clocks and the totals.
SimulationResult perStep(const std::vector<double> &clock, int64_t steps,
                         double waited, double bytesPerRank) {
  const double n = static_cast<double>(clock.size());
  double finish = 0;
  for (double t : clock)
    finish += t;
  SimulationResult result;
  result.secondsPerStep = finish / n / steps;
  result.bytesPerStep = bytesPerRank / steps;
  result.waitPerStep = waited / n / steps;
  return result;
}

SimulationResult simulateSynchronous(const ClusterModel &model,
                                     const SimulatedStrategy &strategy,
                                     const SimulationConfig &config) {
  std::vector<double> clock(model.ranks, 0), ready(model.ranks);
  double waited = 0, bytes = 0;
  for (int64_t step = 0; step < config.steps; ++step) {
    const double last = computePhase(config, step, clock, ready);
    Prediction p = synchronousStep(model, strategy, config, step);
    for (size_t i = 0; i < clock.size(); ++i) {
      waited += last - ready[i];
      clock[i] = last + p.seconds;
    }
    bytes += p.bytesSent;
  }
  return perStep(clock, config.steps, waited, bytes);
}

/// Synchronous gossip: a pairwise exchange with the schedule's peer (the
/// gossip op's seed is the simulation's); with the agreement, every step
/// is also a group-wide synchronization.
SimulationResult simulateGossip(const ClusterModel &model,
                                SimulatedSchedule schedule,
                                const SimulationConfig &config,
                                bool agreement) {
  const int64_t n = model.ranks;
  std::vector<double> clock(n, 0), ready(n);
  double exchange = 0, bytesPerExchange = 0;
  for (int64_t elements : config.tensors) {
    Prediction p = predictGossip(model, elements);
    exchange += p.seconds - agreementSeconds(model);
    bytesPerExchange += p.bytesSent;
  }
  double waited = 0;
  for (int64_t step = 0; step < config.steps; ++step) {
    const double last = computePhase(config, step, clock, ready);
    for (int64_t i = 0; i < n; ++i) {
      int64_t peer = peerOf(runtimeSchedule(schedule), config.seed, i, n, step);
      double start = agreement  ? last + agreementSeconds(model)
                     : peer < 0 ? ready[i]
                                : std::max(ready[i], ready[peer]);
      waited += start - ready[i];
      clock[i] = start + (peer < 0 ? 0 : exchange);
    }
  }
  return perStep(clock, config.steps, waited, bytesPerExchange * config.steps);
}

/// A link that carries one message at a time.
struct Link {
  double freeAt = 0;
  /// Start of a `seconds` transfer requested at `at`; returns its end.
  double carry(double at, double seconds, double &waited) {
    const double start = std::max(at, freeAt);
    waited += start - at;
    freeAt = start + seconds;
    return freeAt;
  }
};

/// Asynchronous gossip and EASGD: ranks proceed in the order of their
/// ready times; links are the only thing they share.
SimulationResult simulateAsynchronous(const ClusterModel &model,
                                      const SimulatedStrategy &strategy,
                                      const SimulationConfig &config) {
  const int64_t n = model.ranks;
  const double alpha = model.latencySeconds,
               beta = 1.0 / model.linkBytesPerSecond,
               memory = 1.0 / model.memoryBytesPerSecond;
  std::vector<Link> inbound(n), outbound(n);
  std::vector<int64_t> stepOf(n, 0);
  using Event = std::pair<double, int64_t>; // (ready time, rank)
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> ready;
  for (int64_t i = 0; i < n; ++i)
    ready.push({computeSeconds(config, i, 0), i});
  std::vector<double> clock(n, 0);
  double waited = 0, bytes = 0;
  while (!ready.empty()) {
    auto [at, i] = ready.top();
    ready.pop();
    const int64_t step = stepOf[i];
    double t = at;
    if (n > 1 && strategy.kind == SimulatedKind::GossipAsync) {
      // Push to a random other rank's mailbox (the runtime's own draw):
      // its inbound link carries the message; the flush returns when it
      // is delivered. Then mix.
      int64_t peer = peerOf(GRADCOMM_SCHEDULE_RANDOM, config.seed, i, n, step);
      for (int64_t elements : config.tensors) {
        t = inbound[peer].carry(t, 4.0 * elements * beta, waited) + alpha;
        t += 12.0 * elements * memory;
        bytes += 4.0 * elements;
      }
    } else if (n > 1 && step % strategy.period == 0) {
      // Asynchronous EASGD: read the center from rank 0, accumulate the
      // elastic difference into it; rank 0 reaches its own window
      // through memory.
      for (int64_t elements : config.tensors) {
        const double transfer = 4.0 * elements * beta;
        if (i != 0) {
          t = outbound[0].carry(t, transfer, waited) + alpha;
          t = inbound[0].carry(t, transfer, waited) + alpha;
          bytes += 4.0 * elements;
        }
        t += 16.0 * elements * memory;
      }
    }
    clock[i] = t;
    if (++stepOf[i] < config.steps)
      ready.push({t + computeSeconds(config, i, stepOf[i]), i});
  }
  return perStep(clock, config.steps, waited, bytes / n);
}

} // namespace

llvm::Expected<SimulatedStrategy>
mlir::gradcomm::parseSimulatedStrategy(StringRef name) {
  SimulatedStrategy strategy;
  strategy.name = name.str();
  auto number = [](StringRef prefix, int64_t &field, StringRef rest) {
    if (!rest.consume_front(prefix))
      return false;
    return !rest.getAsInteger(10, field) && field >= 1;
  };
  if (name == "dense") {
    strategy.kind = SimulatedKind::Dense;
  } else if (name == "gossip" || name == "gossip-matching") {
    strategy.kind = SimulatedKind::Gossip;
  } else if (name == "gossip-ring") {
    strategy.kind = SimulatedKind::Gossip;
    strategy.schedule = SimulatedSchedule::Ring;
  } else if (name == "gossip-hypercube") {
    strategy.kind = SimulatedKind::Gossip;
    strategy.schedule = SimulatedSchedule::Hypercube;
  } else if (name == "gossip-async") {
    strategy.kind = SimulatedKind::GossipAsync;
  } else if (name == "reduce-scatter") {
    strategy.kind = SimulatedKind::ReduceScatter;
  } else if (name.ends_with("-exact") &&
             number("scalecom-rs-r", strategy.ratio, name.drop_back(6))) {
    strategy.kind = SimulatedKind::ScaleComReduceScatter;
    strategy.exactSelection = true;
  } else if (number("scalecom-rs-r", strategy.ratio, name)) {
    strategy.kind = SimulatedKind::ScaleComReduceScatter;
  } else if (name.ends_with("-exact") &&
             number("scalecom-r", strategy.ratio, name.drop_back(6))) {
    strategy.kind = SimulatedKind::ScaleCom;
    strategy.exactSelection = true;
  } else if (number("scalecom-r", strategy.ratio, name)) {
    strategy.kind = SimulatedKind::ScaleCom;
  } else if (number("local-topk-r", strategy.ratio, name)) {
    strategy.kind = SimulatedKind::LocalTopk;
  } else if (number("easgd-async-p", strategy.period, name)) {
    strategy.kind = SimulatedKind::EasgdAsync;
  } else if (number("easgd-p", strategy.period, name)) {
    strategy.kind = SimulatedKind::Easgd;
  } else {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("unknown strategy '{0}': expected dense, scalecom-rR, "
                      "scalecom-rR-exact, local-topk-rR, gossip, gossip-ring, "
                      "gossip-hypercube, gossip-async, "
                      "easgd-pP, easgd-async-pP, reduce-scatter, "
                      "scalecom-rs-rR or scalecom-rs-rR-exact (R, P >= 1)",
                      name));
  }
  return strategy;
}

llvm::Error mlir::gradcomm::checkSimulatable(const SimulatedStrategy &strategy,
                                             int64_t ranks) {
  if (strategy.kind != SimulatedKind::Gossip)
    return llvm::Error::success();
  if (const char *refusal = ::gradcomm::scheduleRefusal(
          runtimeSchedule(strategy.schedule), ranks, /*pairing=*/true))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0} on {1} ranks: {2} (the runtime refuses it)",
                      strategy.name, ranks, refusal));
  return llvm::Error::success();
}

SimulationResult mlir::gradcomm::simulate(const ClusterModel &model,
                                          const SimulatedStrategy &strategy,
                                          const SimulationConfig &config,
                                          bool agreement) {
  SimulationResult result;
  switch (strategy.kind) {
  case SimulatedKind::Gossip:
    result = simulateGossip(model, strategy.schedule, config, agreement);
    break;
  case SimulatedKind::GossipAsync:
  case SimulatedKind::EasgdAsync:
    result = simulateAsynchronous(model, strategy, config);
    break;
  default:
    result = simulateSynchronous(model, strategy, config);
    break;
  }
  if (strategy.kind == SimulatedKind::LocalTopk) {
    const double others = static_cast<double>(model.ranks - 1);
    double union_ = 0, k = 0;
    for (int64_t elements : config.tensors) {
      const double chosen = std::ceil(static_cast<double>(elements) /
                                      static_cast<double>(strategy.ratio));
      k += chosen;
      union_ += std::min(static_cast<double>(elements),
                         chosen * (1 + others * (1 - config.topkOverlap)));
    }
    result.densityOverK = k > 0 ? union_ / k : 1;
  }
  return result;
}
