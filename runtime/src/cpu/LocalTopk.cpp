//===- LocalTopk.cpp - Local top-k + all-gather baseline ------------------===//
//
// Part of the GradComm project.
//
// Every rank picks its own top-k, so the sparse vectors cannot be summed by
// an all-reduce: values and indices are all-gathered (traffic grows with n)
// and summed in rank order, so every rank computes the same bits.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "Kernels.h"

#include <algorithm>

using namespace gradcomm;

/// The step's bookkeeping, common to both backends: counter, union size,
/// bytes (ring all-gather: each rank sends and receives n - 1 blocks).
static gradcomm_status finishLocalTopk(State &state, const char *stateName,
                                       int64_t k, int64_t distinct,
                                       int64_t *unionSize, double start) {
  if (unionSize)
    *unionSize = distinct;
  state.step += 1;
  gradcomm_op_stats &stats = opStats(stateName);
  uint64_t blocks = static_cast<uint64_t>(context().size - 1);
  stats.calls += 1;
  stats.messages += 2;
  stats.value_bytes_sent += blocks * k * sizeof(float);
  stats.value_bytes_received += blocks * k * sizeof(float);
  stats.index_bytes_sent += blocks * k * sizeof(int64_t);
  stats.index_bytes_received += blocks * k * sizeof(int64_t);
  stats.last_union_size = distinct;
  stats.seconds += now() - start;
  return GRADCOMM_OK;
}

/// The call skipped by the non-finite policy: a zero output, no union,
/// memory and step unchanged.
static gradcomm_status skipLocalTopk(const Call &call, float *out,
                                     int64_t count, int64_t *unionSize) {
  if (unionSize)
    *unionSize = 0;
  return zeroBuffer(call, out, count);
}

gradcomm_status gradcomm_local_topk_all_gather_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_reduction reduction, int64_t *unionSize) {
  return guarded("local_topk_all_gather_f32", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    const Context &ctx = context();
    State *state = nullptr;
    GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
      GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
      GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, k));
      GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "grad", grad));
      GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "out", out));
      GRADCOMM_RETURN_IF_ERROR(requireReduction(call, reduction));
      // The all-gathered buffers hold n * k entries; MPI counts are int.
      // (Compared by division: k * n can overflow int64.)
      if (k > INT32_MAX / ctx.size)
        return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                         "k * ranks (" + std::to_string(k) + " * " +
                             std::to_string(ctx.size) +
                             ") exceeds the all-gather limit 2^31 - 1");
      return lookupState(call, stateName, count, state);
    }));

    double start = now();
    int64_t distinct = 0;
    const std::vector<CheckField> fields = {
        {"count", count},
        {"k", k},
        {"reduction", reduction},
        {"step", static_cast<int64_t>(state->step)}};
    if (usingCuda()) {
      char error[kErrorSize] = {0};
      gradcomm_status agreed = checkConsistencyOfInput(
          call, grad, count, inputLimit(/*summed=*/true), fields);
      if (skippedNonFinite(agreed, stateName))
        return skipLocalTopk(call, out, count, unionSize);
      GRADCOMM_RETURN_IF_ERROR(agreed);
      GRADCOMM_RETURN_IF_ERROR(
          cudaStatus(call,
                     ctx.cuda->localTopk(state->device, grad, out, count, k,
                                         reduction == GRADCOMM_REDUCE_AVERAGE,
                                         &distinct, error),
                     error));
      return finishLocalTopk(*state, stateName, k, distinct, unionSize, start);
    }
    static thread_local cpu::SelectScratch scratch;
    state->indices.resize(k);
    state->values.resize(k);
    uint32_t largest = cpu::selectExact(state->memory.data(), grad, count, k,
                                        state->indices.data(), scratch);
    gradcomm_status agreed = checkConsistency(
        call, fields,
        scanForNonFinite() &&
            cpu::exceedsLimit(largest, inputLimit(/*summed=*/true)));
    if (skippedNonFinite(agreed, stateName))
      return skipLocalTopk(call, out, count, unionSize);
    GRADCOMM_RETURN_IF_ERROR(agreed);
    // Plain error feedback (beta = 1): m = p - c; the same pass zeroes the
    // output the gathered blocks are added into.
    cpu::gatherAndUpdate(state->memory.data(), grad, count,
                         state->indices.data(), k, 1.0f, state->values.data(),
                         out);

    static thread_local std::vector<float> allValues;
    static thread_local std::vector<int64_t> allIndices;
    allValues.resize(k * ctx.size);
    allIndices.resize(k * ctx.size);
    MPI_Request requests[2];
    GRADCOMM_RETURN_IF_ERROR(call.mpi(
        MPI_Iallgather(state->values.data(), static_cast<int>(k), MPI_FLOAT,
                       allValues.data(), static_cast<int>(k), MPI_FLOAT,
                       ctx.comm, &requests[0]),
        "MPI_Iallgather (values)"));
    GRADCOMM_RETURN_IF_ERROR(call.mpi(
        MPI_Iallgather(state->indices.data(), static_cast<int>(k), MPI_INT64_T,
                       allIndices.data(), static_cast<int>(k), MPI_INT64_T,
                       ctx.comm, &requests[1]),
        "MPI_Iallgather (indices)"));
    GRADCOMM_RETURN_IF_ERROR(
        waitYielding(call, requests[0], "MPI_Iallgather (values)"));
    GRADCOMM_RETURN_IF_ERROR(
        waitYielding(call, requests[1], "MPI_Iallgather (indices)"));

    for (int64_t j = 0; j < k * ctx.size; ++j)
      out[allIndices[j]] += allValues[j];
    std::sort(allIndices.begin(), allIndices.end());
    distinct =
        std::unique(allIndices.begin(), allIndices.end()) - allIndices.begin();
    if (reduction == GRADCOMM_REDUCE_AVERAGE) {
      const float groupSize = static_cast<float>(ctx.size);
      for (int64_t j = 0; j < distinct; ++j)
        out[allIndices[j]] /= groupSize;
    }
    return finishLocalTopk(*state, stateName, k, distinct, unionSize, start);
  });
}
