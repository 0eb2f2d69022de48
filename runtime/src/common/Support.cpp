//===- Support.cpp - State lookup, consistency check, counters, MPI ------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <sched.h>

using namespace gradcomm;

gradcomm_status gradcomm::lookupState(const Call &call, const char *name,
                                      int64_t count, State *&state) {
  auto &states = context().states;
  auto it = states.find(name);
  if (it == states.end()) {
    State fresh;
    fresh.count = count;
    if (usingCuda()) {
      char error[kErrorSize] = {0};
      GRADCOMM_RETURN_IF_ERROR(cudaStatus(
          call, context().cuda->allocate(&fresh.device, count, error), error));
    } else {
      fresh.memory.assign(count, 0.0f);
    }
    it = states.emplace(name, std::move(fresh)).first;
  } else if (it->second.count != count) {
    return call.fail(GRADCOMM_ERR_STATE,
                     "state '" + std::string(name) + "' has " +
                         std::to_string(it->second.count) +
                         " elements, the call passes " + std::to_string(count));
  }
  state = &it->second;
  return GRADCOMM_OK;
}

gradcomm_status
gradcomm::checkConsistencyOnDevice(const Call &call, const float *grad,
                                   int64_t count,
                                   const std::vector<CheckField> &fields) {
  const Context &ctx = context();
  int nonFinite = 0;
  if (ctx.consistencyCheck) {
    char error[kErrorSize] = {0};
    GRADCOMM_RETURN_IF_ERROR(cudaStatus(
        call, ctx.cuda->anyNonFinite(grad, count, &nonFinite, error), error));
  }
  return checkConsistency(call, fields, nonFinite != 0);
}

int64_t gradcomm::floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

gradcomm_status
gradcomm::checkConsistency(const Call &call,
                           const std::vector<CheckField> &fields,
                           bool localNonFinite) {
  const Context &ctx = context();
  if (!ctx.consistencyCheck)
    return GRADCOMM_OK;
  // One MPI_MAX all-reduce gives every field's max and (negated) min, and
  // the lowest rank with a non-finite gradient (encoded as size - rank).
  const size_t n = fields.size();
  std::vector<int64_t> buffer(2 * n + 1);
  size_t i = 0;
  for (const CheckField &field : fields) {
    buffer[i] = field.value;
    buffer[n + i] = -field.value;
    ++i;
  }
  buffer[2 * n] = localNonFinite ? ctx.size - ctx.rank : 0;
  MPI_Request request;
  GRADCOMM_RETURN_IF_ERROR(
      call.mpi(MPI_Iallreduce(MPI_IN_PLACE, buffer.data(),
                              static_cast<int>(buffer.size()), MPI_INT64_T,
                              MPI_MAX, ctx.comm, &request),
               "MPI_Iallreduce (consistency check)"));
  GRADCOMM_RETURN_IF_ERROR(
      waitYielding(call, request, "MPI_Iallreduce (consistency check)"));
  i = 0;
  for (const CheckField &field : fields) {
    int64_t max = buffer[i], min = -buffer[n + i];
    if (min != max)
      return call.fail(GRADCOMM_ERR_MISMATCH,
                       std::string("ranks disagree on ") + field.name +
                           " (this rank " + std::to_string(field.value) +
                           ", min " + std::to_string(min) + ", max " +
                           std::to_string(max) + ")");
    ++i;
  }
  if (buffer[2 * n] != 0)
    return call.fail(GRADCOMM_ERR_NON_FINITE,
                     "non-finite gradient (NaN or Inf) on rank " +
                         std::to_string(ctx.size - buffer[2 * n]) +
                         "; step skipped on every rank, state unchanged");
  return GRADCOMM_OK;
}

gradcomm_op_stats &gradcomm::opStats(const char *name) {
  return context().stats[name ? name : ""];
}

uint64_t gradcomm::allReduceBytes(uint64_t bytes, int size) {
  // Ring all-reduce: reduce-scatter + all-gather, 2 (n - 1) / n of the
  // buffer each way.
  return size > 1 ? 2 * bytes * (size - 1) / size : 0;
}

uint64_t gradcomm::broadcastBytes(uint64_t bytes, int size) {
  // Scatter + all-gather broadcast (what MPICH uses for large messages):
  // (n - 1) / n of the buffer each way on every rank.
  return size > 1 ? bytes * (size - 1) / size : 0;
}

gradcomm_status gradcomm::allReduceSum(const Call &call, float *data,
                                       int64_t count) {
  for (int64_t offset = 0; offset < count; offset += INT_MAX) {
    int chunk = static_cast<int>(std::min<int64_t>(count - offset, INT_MAX));
    MPI_Request request;
    GRADCOMM_RETURN_IF_ERROR(
        call.mpi(MPI_Iallreduce(MPI_IN_PLACE, data + offset, chunk, MPI_FLOAT,
                                MPI_SUM, context().comm, &request),
                 "MPI_Iallreduce"));
    GRADCOMM_RETURN_IF_ERROR(waitYielding(call, request, "MPI_Iallreduce"));
  }
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::broadcastIndices(const Call &call, int64_t *data,
                                           int64_t count, int root) {
  for (int64_t offset = 0; offset < count; offset += INT_MAX) {
    int chunk = static_cast<int>(std::min<int64_t>(count - offset, INT_MAX));
    MPI_Request request;
    GRADCOMM_RETURN_IF_ERROR(
        call.mpi(MPI_Ibcast(data + offset, chunk, MPI_INT64_T, root,
                            context().comm, &request),
                 "MPI_Ibcast"));
    GRADCOMM_RETURN_IF_ERROR(waitYielding(call, request, "MPI_Ibcast"));
  }
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::waitYielding(const Call &call, MPI_Request &request,
                                       const char *what) {
  // A blocking MPI call busy-polls: with more ranks than cores (4 ranks on
  // a 2-core machine), the waiting ranks take the cores the others need
  // to compute, and a step takes 100x longer. Test a little, then yield
  // the core between tests; with one rank per core the yield returns at
  // once.
  constexpr int kSpinsBeforeYield = 64;
  for (int spins = 0;; ++spins) {
    int done = 0;
    GRADCOMM_RETURN_IF_ERROR(
        call.mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what));
    if (done)
      return GRADCOMM_OK;
    if (spins >= kSpinsBeforeYield)
      sched_yield();
  }
}

double gradcomm::now() { return MPI_Wtime(); }

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

gradcomm_status gradcomm_set_consistency_check(int enabled) {
  return guarded("set_consistency_check", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    context().consistencyCheck = enabled != 0;
    return GRADCOMM_OK;
  });
}
