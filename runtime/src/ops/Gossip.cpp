//===- Gossip.cpp - Gossip exchange and consensus distance ----------------===//
//
// Part of the GradComm project.
//
// docs/design/architecture.md section 3: pairwise mixing with the peer of a
// coordination-free schedule. Both sides of a pair exchange with each
// other in the same call (the backend posts the receive and the send at
// once), so it cannot deadlock.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Schedule.h"
#include "Wire.h"

#include <climits>
#include <memory>
#include <vector>

using namespace gradcomm;

gradcomm_status gradcomm::validateSchedule(const Call &call,
                                           gradcomm_schedule schedule, int size,
                                           bool pairing) {
  const char *refusal = scheduleRefusal(schedule, size, pairing);
  if (refusal == nullptr)
    return GRADCOMM_OK;
  std::string message = refusal;
  if (schedule == GRADCOMM_SCHEDULE_HYPERCUBE)
    message += ", got " + std::to_string(size);
  else if (schedule != GRADCOMM_SCHEDULE_RANDOM)
    message += " " + std::to_string(static_cast<int>(schedule));
  return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, message);
}

gradcomm_status gradcomm_gossip_peer(gradcomm_schedule schedule, uint64_t seed,
                                     uint64_t step, int rank, int size,
                                     int *peer) {
  return guarded("gossip_peer", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "peer", peer));
    GRADCOMM_RETURN_IF_ERROR(requireRange(call, "size", size, 1, INT_MAX));
    GRADCOMM_RETURN_IF_ERROR(requireRange(call, "rank", rank, 0, size - 1));
    GRADCOMM_RETURN_IF_ERROR(
        validateSchedule(call, schedule, size, /*pairing=*/false));
    *peer = schedulePeer(schedule, seed, step, rank, size);
    return GRADCOMM_OK;
  });
}

namespace {

/// The blocking and started exchanges' common part: arguments, state,
/// agreement and the non-finite policy, then the step counter moves on.
/// `*peer` is the schedule's peer, or -1 when this rank does not exchange
/// this time (a skipped call, a step between periods, no partner).
gradcomm_status beginGossip(const Call &call, const char *stateName, float *x,
                            int64_t count, gradcomm_schedule schedule,
                            float mixing, uint64_t seed, int64_t period,
                            gradcomm_wire wire, int *peer) {
  *peer = -1;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  const Context &ctx = context();
  State *state = nullptr;
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(
        requireReplica(call, stateName, x, count, INT_MAX, period));
    GRADCOMM_RETURN_IF_ERROR(
        validateSchedule(call, schedule, ctx.size, /*pairing=*/true));
    GRADCOMM_RETURN_IF_ERROR(requireMixing(call, mixing));
    GRADCOMM_RETURN_IF_ERROR(requireWireOnHostOrDevice(call, wire));
    return lookupState(call, stateName, 0, state);
  }));
  // A replica holding NaN/Inf would spread it to its peer: under the
  // error and skip policies the exchange does not happen on any rank.
  std::vector<CheckField> fields = {{"count", count},
                                    {"schedule", schedule},
                                    {"mixing", floatBits(mixing)},
                                    {"seed", static_cast<int64_t>(seed)},
                                    {"period", period},
                                    {"step", static_cast<int64_t>(state->step)},
                                    {"wire", wire}};
  // Mixing is a convex combination: only NaN and Inf count (and, on a
  // binary16 wire, what it cannot carry).
  gradcomm_status agreed = checkConsistencyOfInput(
      call, x, count, wireInputLimit(wire, /*summed=*/false), fields);
  if (skippedNonFinite(agreed, stateName))
    return GRADCOMM_OK; // the replica and the step counter as they were
  GRADCOMM_RETURN_IF_ERROR(agreed);
  // Every rank of the group is in this call: the CPU backend's exchange
  // needs to know which peers share the node (once per group).
  GRADCOMM_RETURN_IF_ERROR(mapNodes(call));
  opStats(stateName).calls += 1;
  uint64_t step = state->step;
  state->step += 1;
  if (step % period != 0)
    return GRADCOMM_OK;
  // The schedule advances once per exchange, so period > 1 still cycles
  // through every hypercube dimension.
  *peer = schedulePeer(schedule, seed, step / period, ctx.rank, ctx.size);
  return GRADCOMM_OK;
}

void countExchange(const char *stateName, int64_t count, gradcomm_wire wire,
                   double start) {
  gradcomm_op_stats &stats = opStats(stateName);
  const uint64_t bytes = wireValueBytes(wire) * static_cast<uint64_t>(count);
  stats.messages += 1;
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
  stats.seconds += now() - start;
}

/// The blocking exchange, its values travelling as `wire`.
gradcomm_status gossipExchange(const Call &call, const char *stateName,
                               float *x, int64_t count,
                               gradcomm_schedule schedule, float mixing,
                               uint64_t seed, int64_t period,
                               gradcomm_wire wire) {
  int peer = -1;
  GRADCOMM_RETURN_IF_ERROR(beginGossip(call, stateName, x, count, schedule,
                                       mixing, seed, period, wire, &peer));
  if (peer < 0)
    return GRADCOMM_OK;
  const double start = now();
  GRADCOMM_RETURN_IF_ERROR(
      wire == GRADCOMM_WIRE_F32
          ? backend().gossip(call, x, count, peer, mixing)
          : gossipWire(call, x, count, peer, mixing, wire));
  countExchange(stateName, count, wire, start);
  return GRADCOMM_OK;
}

/// The started exchange, its values travelling as `wire`.
gradcomm_status startGossipExchange(const Call &call, const char *stateName,
                                    float *x, int64_t count,
                                    gradcomm_schedule schedule, float mixing,
                                    uint64_t seed, int64_t period,
                                    gradcomm_wire wire,
                                    gradcomm_request *request) {
  GRADCOMM_RETURN_IF_ERROR(requireStartable(call, request, StartedForm::Gossip,
                                            "gradcomm_gossip_exchange_f32"));
  int peer = -1;
  GRADCOMM_RETURN_IF_ERROR(beginGossip(call, stateName, x, count, schedule,
                                       mixing, seed, period, wire, &peer));
  auto started = std::make_unique<gradcomm_request_s>();
  started->opName = stateName;
  // Nothing to exchange this time: a request that completes at once.
  started->skipped = peer < 0;
  if (peer >= 0) {
    const double start = now();
    GRADCOMM_RETURN_IF_ERROR(
        wire == GRADCOMM_WIRE_F32
            ? backend().startGossip(call, x, count, peer, mixing, *started)
            : startGossipWire(call, x, count, peer, mixing, wire, *started));
    alsoFinish(*started, [name = started->opName, count, wire, start] {
      countExchange(name.c_str(), count, wire, start);
    });
  }
  *request = trackRequest(std::move(started));
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_gossip_exchange_f32(const char *stateName, float *x,
                                             int64_t count,
                                             gradcomm_schedule schedule,
                                             float mixing, uint64_t seed,
                                             int64_t period) {
  return guarded("gossip_exchange_f32", stateName, [&](const Call &call) {
    return gossipExchange(call, stateName, x, count, schedule, mixing, seed,
                          period, GRADCOMM_WIRE_F32);
  });
}

gradcomm_status gradcomm_gossip_exchange_wire_f32(
    const char *stateName, float *x, int64_t count, gradcomm_schedule schedule,
    float mixing, uint64_t seed, int64_t period, gradcomm_wire wire) {
  return guarded("gossip_exchange_wire_f32", stateName, [&](const Call &call) {
    return gossipExchange(call, stateName, x, count, schedule, mixing, seed,
                          period, wire);
  });
}

gradcomm_status gradcomm_gossip_exchange_start_f32(
    const char *stateName, float *x, int64_t count, gradcomm_schedule schedule,
    float mixing, uint64_t seed, int64_t period, gradcomm_request *request) {
  return guarded("gossip_exchange_start_f32", stateName, [&](const Call &call) {
    return startGossipExchange(call, stateName, x, count, schedule, mixing,
                               seed, period, GRADCOMM_WIRE_F32, request);
  });
}

gradcomm_status gradcomm_gossip_exchange_wire_start_f32(
    const char *stateName, float *x, int64_t count, gradcomm_schedule schedule,
    float mixing, uint64_t seed, int64_t period, gradcomm_wire wire,
    gradcomm_request *request) {
  return guarded(
      "gossip_exchange_wire_start_f32", stateName, [&](const Call &call) {
        return startGossipExchange(call, stateName, x, count, schedule, mixing,
                                   seed, period, wire, request);
      });
}

/// Sums `count` (<= INT_MAX) doubles across ranks in place, under the
/// watchdog.
static gradcomm_status sumDoubles(const Call &call, double *data,
                                  int64_t count) {
  return allReduce(call, data, count, Element::Float64, Reduction::Sum,
                   "all-reduce");
}

gradcomm_status gradcomm_consensus_distance_f32(const float *x, int64_t count,
                                                double *distance) {
  return guarded("consensus_distance_f32", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
      GRADCOMM_RETURN_IF_ERROR(requireRange(call, "count", count, 1, INT_MAX));
      GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "x", x));
      return requirePointer(call, "distance", distance);
    }));
    GRADCOMM_RETURN_IF_ERROR(checkConsistency(call, {{"count", count}}, false));
    const Context &ctx = context();
    // A logging quantity: on CUDA the replica comes to the host first.
    std::vector<uint8_t> staging;
    const void *host = nullptr;
    GRADCOMM_RETURN_IF_ERROR(
        hostView(call, x, sizeof(float) * count, staging, &host));
    x = static_cast<const float *>(host);
    // In double, so the distance of nearly equal replicas is not noise.
    std::vector<double> mean(x, x + count);
    GRADCOMM_RETURN_IF_ERROR(sumDoubles(call, mean.data(), count));
    double local = 0.0;
    for (int64_t i = 0; i < count; ++i) {
      double d = x[i] - mean[i] / ctx.size;
      local += d * d;
    }
    GRADCOMM_RETURN_IF_ERROR(sumDoubles(call, &local, 1));
    *distance = local / ctx.size;
    return GRADCOMM_OK;
  });
}
