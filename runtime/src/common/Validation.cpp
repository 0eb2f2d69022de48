//===- Validation.cpp - Argument checks of the entry points ---------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sched.h>
#include <time.h>
#include <vector>

using namespace gradcomm;

gradcomm_status gradcomm::requireName(const Call &call, const char *argument,
                                      const char *value) {
  if (!value || !*value)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("'") + argument + "' is null or empty");
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::requirePointer(const Call &call, const char *argument,
                                         const void *pointer) {
  if (!pointer)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("'") + argument + "' is null");
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::requireReplica(const Call &call,
                                         const char *stateName, const float *x,
                                         int64_t count, int64_t maxCount,
                                         int64_t period) {
  GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
  GRADCOMM_RETURN_IF_ERROR(requireRange(call, "count", count, 1, maxCount));
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "x", x));
  return requireRange(call, "period", period, 1, INT64_MAX);
}

gradcomm_status gradcomm::requireMixing(const Call &call, float mixing) {
  if (mixing > 0.0f && mixing < 1.0f)
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                   "'mixing' must be in (0, 1), got " + std::to_string(mixing));
}

gradcomm_status gradcomm::requireElasticAlpha(const Call &call, float alpha) {
  const int size = context().size;
  if (alpha > 0.0f && static_cast<double>(alpha) * size <= 1.0 + 1e-6)
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                   "'alpha' must be in (0, 1/n] (n alpha is the center's "
                   "moving rate), got " +
                       std::to_string(alpha) +
                       " with n = " + std::to_string(size));
}

gradcomm_status gradcomm::requireRange(const Call &call, const char *argument,
                                       int64_t value, int64_t low,
                                       int64_t high) {
  if (value < low || value > high)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("'") + argument + "' must be in [" +
                         std::to_string(low) + ", " + std::to_string(high) +
                         "], got " + std::to_string(value));
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::requireCountAndK(const Call &call, int64_t count,
                                           int64_t k) {
  GRADCOMM_RETURN_IF_ERROR(
      requireRange(call, "count", count, 1, INT64_MAX / 2));
  return requireRange(call, "k", k, 1, count);
}

gradcomm_status gradcomm::requireReduction(const Call &call,
                                           gradcomm_reduction reduction) {
  if (reduction != GRADCOMM_REDUCE_SUM && reduction != GRADCOMM_REDUCE_AVERAGE)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "unknown reduction " +
                         std::to_string(static_cast<int>(reduction)));
  return GRADCOMM_OK;
}
