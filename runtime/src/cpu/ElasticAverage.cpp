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
      GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
      GRADCOMM_RETURN_IF_ERROR(requireRange(call, "count", count, 1, INT_MAX));
      GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "x", x));
      GRADCOMM_RETURN_IF_ERROR(
          requireRange(call, "period", period, 1, INT64_MAX));
      // (A tolerance for alpha = beta / n rounded to float.)
      if (!(alpha > 0.0f) ||
          !(static_cast<double>(alpha) * ctx.size <= 1.0 + 1e-6))
        return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                         "'alpha' must be in (0, 1/n] (n alpha is the "
                         "center's moving rate), got " +
                             std::to_string(alpha) +
                             " with n = " + std::to_string(ctx.size));
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
      std::copy(x, x + count, center);
      GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, center, count));
      const float n = static_cast<float>(ctx.size);
      for (int64_t i = 0; i < count; ++i)
        center[i] = center[i] / n;
      stats.messages += 1;
      stats.value_bytes_sent += allReduceBytes(bytes, ctx.size);
      stats.value_bytes_received += allReduceBytes(bytes, ctx.size);
    }
    state->step += 1;
    if (step % period == 0) {
      // This rank's difference and the sum of all of them; nothing is
      // updated until the sum has arrived.
      static thread_local std::vector<float> difference, sum;
      difference.resize(count);
      sum.resize(count);
      for (int64_t i = 0; i < count; ++i)
        difference[i] = sum[i] = x[i] - center[i];
      GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, sum.data(), count));
      for (int64_t i = 0; i < count; ++i) {
        x[i] = x[i] - alpha * difference[i];
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
