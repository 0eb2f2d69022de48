//===- ElasticAverage.cpp - Synchronous elastic averaging (EASGD) ---------===//
//
// Part of the GradComm project.
//
// docs/gossip.md: each replica is pulled toward a center variable by an
// elastic force and the center moves toward the replicas by the sum of the
// same forces. The center is replicated: every rank holds it in its state
// and applies the same all-reduced update, so the copies stay bit-identical
// (MPI gives every rank the same sum). On a device backend (CUDA) the
// blocking form runs there (Backend::deviceElasticAverage); the started
// form is the CPU backend's.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Wire.h"

#include <climits>
#include <vector>

using namespace gradcomm;

namespace {

/// The blocking and started forms' common part: arguments, state, the
/// agreement, the center's initialization on the state's first call and
/// the counter. `*exchange`: this call is a period's exchange; `*first`:
/// the state's first call, whose center a device backend initializes with
/// the exchange (a host backend's is set here); `*skipped`: the non-finite
/// policy skipped it (nothing changed).
gradcomm_status beginElasticAverage(const Call &call, const char *stateName,
                                    const float *x, int64_t count, float alpha,
                                    int64_t period, gradcomm_wire wire,
                                    State *&state, bool *exchange, bool *first,
                                    bool *skipped) {
  *exchange = *first = *skipped = false;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  const Context &ctx = context();
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(
        requireReplica(call, stateName, x, count, INT_MAX, period));
    GRADCOMM_RETURN_IF_ERROR(requireElasticAlpha(call, alpha));
    GRADCOMM_RETURN_IF_ERROR(requireWire(call, wire));
    return lookupIdleState(call, stateName, count, state);
  }));
  std::vector<CheckField> fields = {{"count", count},
                                    {"alpha", floatBits(alpha)},
                                    {"period", period},
                                    {"step", static_cast<int64_t>(state->step)},
                                    {"wire", wire}};
  // The differences are summed over the ranks (in the wire's type).
  gradcomm_status agreed = checkConsistencyOfInput(
      call, x, count, wireInputLimit(wire, /*summed=*/true), fields);
  if ((*skipped = skippedNonFinite(agreed, stateName)))
    return GRADCOMM_OK; // replica, center and counter as they were
  GRADCOMM_RETURN_IF_ERROR(agreed);

  gradcomm_op_stats &stats = opStats(stateName);
  stats.calls += 1;
  const uint64_t step = state->step;
  const uint64_t bytes = sizeof(float) * static_cast<uint64_t>(count);
  if (step == 0) {
    // The center starts at the mean of the replicas (their common
    // initialization, when they share one). Once per state, so the
    // started form does it blocking too.
    *first = true;
    if (backend().tensorsOnHost())
      GRADCOMM_RETURN_IF_ERROR(meanOverRanks(call, x, count, state->data()));
    stats.messages += 1;
    stats.value_bytes_sent += allReduceBytes(bytes, ctx.size);
    stats.value_bytes_received += allReduceBytes(bytes, ctx.size);
  }
  state->step += 1;
  *exchange = step % period == 0;
  if (*exchange) {
    const uint64_t wireBytes =
        wireValueBytes(wire) * static_cast<uint64_t>(count);
    stats.messages += 1;
    stats.value_bytes_sent += allReduceBytes(wireBytes, ctx.size);
    stats.value_bytes_received += allReduceBytes(wireBytes, ctx.size);
  }
  return GRADCOMM_OK;
}

/// sum[i] = x[i] - c[i]: this rank's difference, summed over the ranks.
void differences(const float *x, const float *center, int64_t count,
                 float *sum) {
  for (int64_t i = 0; i < count; ++i)
    sum[i] = x[i] - center[i];
}

/// The exchange's update once the summed differences have arrived. This
/// rank's own difference is recomputed (x and c have not changed), so no
/// second buffer is written.
void applyElasticUpdate(float *x, float *center, const float *sum,
                        int64_t count, float alpha) {
  for (int64_t i = 0; i < count; ++i) {
    const float difference = x[i] - center[i];
    x[i] = x[i] - alpha * difference;
    center[i] = center[i] + alpha * sum[i];
  }
}

/// The blocking form, the differences travelling as `wire`.
gradcomm_status elasticAverage(const Call &call, const char *stateName,
                               float *x, int64_t count, float alpha,
                               int64_t period, gradcomm_wire wire) {
  const double start = now();
  State *state = nullptr;
  bool exchange = false, first = false, skipped = false;
  GRADCOMM_RETURN_IF_ERROR(beginElasticAverage(call, stateName, x, count, alpha,
                                               period, wire, state, &exchange,
                                               &first, &skipped));
  if (skipped)
    return GRADCOMM_OK;
  if (exchange && !backend().tensorsOnHost()) {
    // The first call always exchanges (step 0 of any period).
    GRADCOMM_RETURN_IF_ERROR(backend().deviceElasticAverage(
        call, x, state->data(), count, alpha, first, wire));
  } else if (exchange) {
    static thread_local std::vector<float> sum;
    sum.resize(count);
    differences(x, state->data(), count, sum.data());
    GRADCOMM_RETURN_IF_ERROR(allReduceSumWire(call, sum.data(), count, wire));
    applyElasticUpdate(x, state->data(), sum.data(), count, alpha);
  }
  opStats(stateName).seconds += now() - start;
  return GRADCOMM_OK;
}

/// The started form, the differences travelling as `wire`.
gradcomm_status startElasticAverage(const Call &call, const char *stateName,
                                    float *x, int64_t count, float alpha,
                                    int64_t period, gradcomm_wire wire,
                                    gradcomm_request *request) {
  GRADCOMM_RETURN_IF_ERROR(requireStartable(call, request,
                                            StartedForm::ElasticAverage,
                                            "gradcomm_elastic_average_f32"));
  const double start = now();
  State *state = nullptr;
  bool exchange = false, first = false, skipped = false;
  GRADCOMM_RETURN_IF_ERROR(beginElasticAverage(call, stateName, x, count, alpha,
                                               period, wire, state, &exchange,
                                               &first, &skipped));
  auto started = std::make_unique<gradcomm_request_s>();
  started->opName = stateName;
  started->skipped = skipped;
  if (exchange && !skipped) {
    // The differences go into the request's own buffer: several calls
    // may be in flight.
    auto sum = std::make_shared<std::vector<float>>(count);
    differences(x, state->data(), count, sum->data());
    started->what = "all-reduce (started elastic average)";
    std::function<void()> widen;
    GRADCOMM_RETURN_IF_ERROR(startAllReduceSumWire(call, sum->data(), count,
                                                   wire, *started, &widen));
    started->finish = [name = started->opName, state, x, count, alpha, sum,
                       widen, start] {
      if (widen)
        widen();
      applyElasticUpdate(x, state->data(), sum->data(), count, alpha);
      opStats(name.c_str()).seconds += now() - start;
    };
    // The center is read by the update at the wait.
    state->inFlight = true;
    alsoRelease(*started, [state] { state->inFlight = false; });
  }
  *request = trackRequest(std::move(started));
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_elastic_average_f32(const char *stateName, float *x,
                                             int64_t count, float alpha,
                                             int64_t period) {
  return guarded("elastic_average_f32", stateName, [&](const Call &call) {
    return elasticAverage(call, stateName, x, count, alpha, period,
                          GRADCOMM_WIRE_F32);
  });
}

gradcomm_status gradcomm_elastic_average_wire_f32(const char *stateName,
                                                  float *x, int64_t count,
                                                  float alpha, int64_t period,
                                                  gradcomm_wire wire) {
  return guarded("elastic_average_wire_f32", stateName, [&](const Call &call) {
    return elasticAverage(call, stateName, x, count, alpha, period, wire);
  });
}

gradcomm_status gradcomm_elastic_average_start_f32(const char *stateName,
                                                   float *x, int64_t count,
                                                   float alpha, int64_t period,
                                                   gradcomm_request *request) {
  return guarded("elastic_average_start_f32", stateName, [&](const Call &call) {
    return startElasticAverage(call, stateName, x, count, alpha, period,
                               GRADCOMM_WIRE_F32, request);
  });
}

gradcomm_status gradcomm_elastic_average_wire_start_f32(
    const char *stateName, float *x, int64_t count, float alpha, int64_t period,
    gradcomm_wire wire, gradcomm_request *request) {
  return guarded("elastic_average_wire_start_f32", stateName,
                 [&](const Call &call) {
                   return startElasticAverage(call, stateName, x, count, alpha,
                                              period, wire, request);
                 });
}
