//===- DenseAllReduce.cpp - Dense all-reduce over MPI ---------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <climits>
#include <cstddef>

using namespace gradcomm;

gradcomm_status gradcomm_dense_all_reduce_f32(const char *opName, float *data,
                                              int64_t count,
                                              gradcomm_reduction reduction) {
  return guarded("dense_all_reduce_f32", opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    if (count < 0)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "count must be >= 0, got " + std::to_string(count));
    if (!data && count > 0)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, "data pointer is null");
    if (reduction != GRADCOMM_REDUCE_SUM &&
        reduction != GRADCOMM_REDUCE_AVERAGE)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "unknown reduction " +
                           std::to_string(static_cast<int>(reduction)));
    const Context &ctx = context();
    // MPI counts are int: send anything larger in several messages.
    for (int64_t offset = 0; offset < count; offset += INT_MAX) {
      int64_t remaining = count - offset;
      int chunk = remaining > INT_MAX ? INT_MAX : static_cast<int>(remaining);
      GRADCOMM_RETURN_IF_ERROR(
          call.mpi(MPI_Allreduce(MPI_IN_PLACE, data + offset, chunk, MPI_FLOAT,
                                 MPI_SUM, ctx.comm),
                   "MPI_Allreduce"));
    }
    if (reduction == GRADCOMM_REDUCE_AVERAGE) {
      // Divide (not multiply by 1/n) so the result is the correctly rounded
      // mean of the sum, as a reference computes it.
      const float groupSize = static_cast<float>(ctx.size);
      for (int64_t i = 0; i < count; ++i)
        data[i] /= groupSize;
    }
    return GRADCOMM_OK;
  });
}
