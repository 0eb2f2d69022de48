//===- DenseAllReduce.cpp - Dense all-reduce over MPI ---------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "Kernels.h"

#include <memory>
#include <string>
#include <vector>

using namespace gradcomm;

namespace {

/// The blocking and started forms' common part: arguments, agreement and
/// the non-finite policy. `*skipped`: the policy zeroed the buffer and
/// nothing is to be sent.
gradcomm_status beginDenseAllReduce(const Call &call, const char *opName,
                                    float *data, int64_t count,
                                    gradcomm_reduction reduction,
                                    bool *skipped) {
  *skipped = false;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    if (count < 0)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "count must be >= 0, got " + std::to_string(count));
    if (!data && count > 0)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, "data pointer is null");
    return requireReduction(call, reduction);
  }));
  // The non-finite policy (docs/runtime.md): the n-rank sum must not
  // overflow either.
  std::vector<CheckField> fields = {{"count", count}, {"reduction", reduction}};
  gradcomm_status agreed = checkConsistencyOfInput(
      call, data, count, inputLimit(/*summed=*/true), fields);
  if (skippedNonFinite(agreed, opName)) {
    *skipped = true;
    return zeroBuffer(call, data, count);
  }
  return agreed;
}

/// The average's division and the counters, once the sum is in `data`.
void finishDenseAllReduce(const char *opName, float *data, int64_t count,
                          gradcomm_reduction reduction, double start) {
  const Context &ctx = context();
  if (!usingCuda() && reduction == GRADCOMM_REDUCE_AVERAGE) {
    // Divide (not multiply by 1/n) so the result is the correctly rounded
    // mean of the sum, as a reference computes it.
    const float groupSize = static_cast<float>(ctx.size);
    for (int64_t i = 0; i < count; ++i)
      data[i] /= groupSize;
  }
  gradcomm_op_stats &stats = opStats(opName);
  uint64_t bytes = allReduceBytes(sizeof(float) * count, ctx.size);
  stats.calls += 1;
  stats.messages += count > 0 ? 1 : 0;
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
  stats.seconds += now() - start;
}

} // namespace

gradcomm_status gradcomm_dense_all_reduce_f32(const char *opName, float *data,
                                              int64_t count,
                                              gradcomm_reduction reduction) {
  return guarded("dense_all_reduce_f32", opName, [&](const Call &call) {
    bool skipped = false;
    GRADCOMM_RETURN_IF_ERROR(
        beginDenseAllReduce(call, opName, data, count, reduction, &skipped));
    if (skipped)
      return GRADCOMM_OK;
    const Context &ctx = context();
    double start = now();
    if (usingCuda()) {
      char error[kErrorSize] = {0};
      GRADCOMM_RETURN_IF_ERROR(cudaStatus(
          call,
          ctx.cuda->denseAllReduce(data, count,
                                   reduction == GRADCOMM_REDUCE_AVERAGE, error),
          error));
    } else {
      GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, data, count));
    }
    finishDenseAllReduce(opName, data, count, reduction, start);
    return GRADCOMM_OK;
  });
}

gradcomm_status
gradcomm_dense_all_reduce_start_f32(const char *opName, float *data,
                                    int64_t count, gradcomm_reduction reduction,
                                    gradcomm_request *request) {
  return guarded("dense_all_reduce_start_f32", opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(
        requireStartable(call, request, "gradcomm_dense_all_reduce_f32"));
    bool skipped = false;
    GRADCOMM_RETURN_IF_ERROR(
        beginDenseAllReduce(call, opName, data, count, reduction, &skipped));
    auto started = std::make_unique<gradcomm_request_s>();
    started->opName = opName ? opName : "";
    started->skipped = skipped;
    const double start = now();
    started->finish = [name = started->opName, data, count, reduction, start] {
      finishDenseAllReduce(name.c_str(), data, count, reduction, start);
    };
    if (!skipped)
      GRADCOMM_RETURN_IF_ERROR(
          startAllReduceSum(call, data, count, started->requests));
    *request = trackRequest(std::move(started));
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_wait(gradcomm_request *request) {
  const char *opName = request && *request ? (*request)->opName.c_str() : "";
  return guarded("wait", opName, [&](const Call &call) {
    if (!request || !*request)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "no request: never started, or already waited for");
    std::unique_ptr<gradcomm_request_s> started(*request);
    *request = nullptr;
    context().requestsInFlight -= 1;
    for (MPI_Request &chunk : started->requests)
      GRADCOMM_RETURN_IF_ERROR(
          waitYielding(call, chunk, started->what, started->peer));
    if (!started->skipped && started->finish)
      started->finish();
    return GRADCOMM_OK;
  });
}
