//===- ElasticAverage.cpp - Synchronous elastic averaging (EASGD) ---------===//
//
// Part of the GradComm project.
//
// docs/gossip.md: each replica is pulled toward a center variable by an
// elastic force and the center moves toward the replicas by the sum of the
// same forces. The center is replicated: every rank holds it in its state
// and applies the same all-reduced update, so the copies stay bit-identical
// (MPI gives every rank the same sum).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <climits>
#include <vector>

using namespace gradcomm;

gradcomm_status gradcomm_elastic_average_f32(const char *stateName, float *x,
                                             int64_t count, float alpha,
                                             int64_t period) {
  return guarded("elastic_average_f32", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    const Context &ctx = context();
    State *state = nullptr;
    GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
      GRADCOMM_RETURN_IF_ERROR(
          requireReplica(call, stateName, x, count, INT_MAX, period));
      GRADCOMM_RETURN_IF_ERROR(requireElasticAlpha(call, alpha));
      if (usingCuda())
        return call.fail(GRADCOMM_ERR_UNSUPPORTED,
                         "elastic averaging runs on the CPU backend only");
      return lookupState(call, stateName, count, state);
    }));
    std::vector<CheckField> fields = {
        {"count", count},
        {"alpha", floatBits(alpha)},
        {"period", period},
        {"step", static_cast<int64_t>(state->step)}};
    // The differences are summed over the ranks.
    gradcomm_status agreed = checkConsistencyOfInput(
        call, x, count, inputLimit(/*summed=*/true), fields);
    if (skippedNonFinite(agreed, stateName))
      return GRADCOMM_OK; // replica, center and counter as they were
    GRADCOMM_RETURN_IF_ERROR(agreed);

    double start = now();
    gradcomm_op_stats &stats = opStats(stateName);
    stats.calls += 1;
    const uint64_t step = state->step;
    float *center = state->data();
    const uint64_t bytes = sizeof(float) * static_cast<uint64_t>(count);
    if (step == 0) {
      // The center starts at the mean of the replicas (their common
      // initialization, when they share one).
      GRADCOMM_RETURN_IF_ERROR(meanOverRanks(call, x, count, center));
      stats.messages += 1;
      stats.value_bytes_sent += allReduceBytes(bytes, ctx.size);
      stats.value_bytes_received += allReduceBytes(bytes, ctx.size);
    }
    state->step += 1;
    if (step % period == 0) {
      // The sum of the ranks' differences; nothing is updated until it has
      // arrived, and this rank's own difference is recomputed then (x and
      // c have not changed), so no second buffer is written.
      static thread_local std::vector<float> sum;
      sum.resize(count);
      for (int64_t i = 0; i < count; ++i)
        sum[i] = x[i] - center[i];
      GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, sum.data(), count));
      for (int64_t i = 0; i < count; ++i) {
        const float difference = x[i] - center[i];
        x[i] = x[i] - alpha * difference;
        center[i] = center[i] + alpha * sum[i];
      }
      stats.messages += 1;
      stats.value_bytes_sent += allReduceBytes(bytes, ctx.size);
      stats.value_bytes_received += allReduceBytes(bytes, ctx.size);
    }
    stats.seconds += now() - start;
    return GRADCOMM_OK;
  });
}
