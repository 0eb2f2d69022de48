//===- DenseAllReduce.cpp - Dense all-reduce over MPI ---------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "Kernels.h"

using namespace gradcomm;

gradcomm_status gradcomm_dense_all_reduce_f32(const char *opName, float *data,
                                              int64_t count,
                                              gradcomm_reduction reduction) {
  return guarded("dense_all_reduce_f32", opName, [&](const Call &call) {
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
    std::vector<CheckField> fields = {{"count", count},
                                      {"reduction", reduction}};
    const Context &ctx = context();
    gradcomm_status agreed = checkConsistencyOfInput(
        call, data, count, inputLimit(/*summed=*/true), fields);
    if (skippedNonFinite(agreed, opName))
      return zeroBuffer(call, data, count);
    GRADCOMM_RETURN_IF_ERROR(agreed);
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
    return GRADCOMM_OK;
  });
}
