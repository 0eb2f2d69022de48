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
#include <memory>
#include <vector>

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

namespace {

/// The gathered blocks of one call: n blocks of k values and k indices.
struct Gathered {
  std::vector<float> values;
  std::vector<int64_t> indices;
};

/// The blocking and started forms' common part: arguments and state, then
/// (CPU) the local selection, the agreement and the error-feedback pass,
/// which leaves this rank's k values and indices in the state's scratch
/// and zeros in `out`. On the CUDA backend, only the arguments and state.
/// `*skipped`: the non-finite policy zeroed `out`, changed nothing else.
gradcomm_status beginLocalTopk(const Call &call, const char *stateName,
                               const float *grad, float *out, int64_t count,
                               int64_t k, gradcomm_reduction reduction,
                               State *&state, bool *skipped) {
  *skipped = false;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  const Context &ctx = context();
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
    return lookupIdleState(call, stateName, count, state);
  }));
  if (usingCuda())
    return GRADCOMM_OK;
  static thread_local cpu::SelectScratch scratch;
  state->indices.resize(k);
  state->values.resize(k);
  uint32_t largest = cpu::selectExact(state->memory.data(), grad, count, k,
                                      state->indices.data(), scratch);
  gradcomm_status agreed = checkConsistency(
      call,
      {{"count", count},
       {"k", k},
       {"reduction", reduction},
       {"step", static_cast<int64_t>(state->step)}},
      scanForNonFinite() &&
          cpu::exceedsLimit(largest, inputLimit(/*summed=*/true)));
  if ((*skipped = skippedNonFinite(agreed, stateName)))
    return zeroBuffer(call, out, count);
  GRADCOMM_RETURN_IF_ERROR(agreed);
  // Plain error feedback (beta = 1): m = p - c; the same pass zeroes the
  // output the gathered blocks are added into.
  cpu::gatherAndUpdate(state->memory.data(), grad, count, state->indices.data(),
                       k, 1.0f, state->values.data(), out);
  return GRADCOMM_OK;
}

/// Starts the all-gathers of this rank's k values and indices into
/// `gathered`.
gradcomm_status startGather(const Call &call, const State &state, int64_t k,
                            Gathered &gathered, MPI_Request requests[2]) {
  const Context &ctx = context();
  gathered.values.resize(k * ctx.size);
  gathered.indices.resize(k * ctx.size);
  GRADCOMM_RETURN_IF_ERROR(call.mpi(
      MPI_Iallgather(state.values.data(), static_cast<int>(k), MPI_FLOAT,
                     gathered.values.data(), static_cast<int>(k), MPI_FLOAT,
                     ctx.comm, &requests[0]),
      "MPI_Iallgather (values)"));
  return call.mpi(MPI_Iallgather(state.indices.data(), static_cast<int>(k),
                                 MPI_INT64_T, gathered.indices.data(),
                                 static_cast<int>(k), MPI_INT64_T, ctx.comm,
                                 &requests[1]),
                  "MPI_Iallgather (indices)");
}

/// Sums the gathered blocks into `out` in rank order (every rank computes
/// the same bits), divides the union's entries for a mean; returns the
/// union's size.
int64_t sumGathered(Gathered &gathered, float *out,
                    gradcomm_reduction reduction) {
  const int64_t entries = static_cast<int64_t>(gathered.indices.size());
  for (int64_t j = 0; j < entries; ++j)
    out[gathered.indices[j]] += gathered.values[j];
  std::vector<int64_t> &indices = gathered.indices;
  std::sort(indices.begin(), indices.end());
  const int64_t distinct =
      std::unique(indices.begin(), indices.end()) - indices.begin();
  if (reduction == GRADCOMM_REDUCE_AVERAGE) {
    const float groupSize = static_cast<float>(context().size);
    for (int64_t j = 0; j < distinct; ++j)
      out[indices[j]] /= groupSize;
  }
  return distinct;
}

} // namespace

gradcomm_status gradcomm_local_topk_all_gather_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_reduction reduction, int64_t *unionSize) {
  return guarded("local_topk_all_gather_f32", stateName, [&](const Call &call) {
    const double start = now();
    State *state = nullptr;
    bool skipped = false;
    GRADCOMM_RETURN_IF_ERROR(beginLocalTopk(call, stateName, grad, out, count,
                                            k, reduction, state, &skipped));
    if (skipped) {
      if (unionSize)
        *unionSize = 0;
      return GRADCOMM_OK;
    }
    const Context &ctx = context();
    int64_t distinct = 0;
    if (usingCuda()) {
      char error[kErrorSize] = {0};
      gradcomm_status agreed = checkConsistencyOfInput(
          call, grad, count, inputLimit(/*summed=*/true),
          {{"count", count},
           {"k", k},
           {"reduction", reduction},
           {"step", static_cast<int64_t>(state->step)}});
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
    static thread_local Gathered gathered;
    MPI_Request requests[2];
    GRADCOMM_RETURN_IF_ERROR(startGather(call, *state, k, gathered, requests));
    GRADCOMM_RETURN_IF_ERROR(
        waitYielding(call, requests[0], "MPI_Iallgather (values)"));
    GRADCOMM_RETURN_IF_ERROR(
        waitYielding(call, requests[1], "MPI_Iallgather (indices)"));
    distinct = sumGathered(gathered, out, reduction);
    return finishLocalTopk(*state, stateName, k, distinct, unionSize, start);
  });
}

gradcomm_status gradcomm_local_topk_all_gather_start_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_reduction reduction, gradcomm_request *request) {
  return guarded(
      "local_topk_all_gather_start_f32", stateName, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(requireStartable(
            call, request, "gradcomm_local_topk_all_gather_f32"));
        const double start = now();
        State *state = nullptr;
        bool skipped = false;
        GRADCOMM_RETURN_IF_ERROR(beginLocalTopk(
            call, stateName, grad, out, count, k, reduction, state, &skipped));
        auto started = std::make_unique<gradcomm_request_s>();
        started->opName = stateName;
        started->skipped = skipped;
        if (!skipped) {
          // The blocks land in the request's own buffers: several calls
          // may be in flight.
          auto gathered = std::make_shared<Gathered>();
          started->requests.resize(2);
          started->what = "MPI_Iallgather (started local top-k)";
          GRADCOMM_RETURN_IF_ERROR(startGather(call, *state, k, *gathered,
                                               started->requests.data()));
          started->finish = [name = started->opName, state, out, k, reduction,
                             gathered, start] {
            int64_t distinct = sumGathered(*gathered, out, reduction);
            finishLocalTopk(*state, name.c_str(), k, distinct, nullptr, start);
          };
          // The state's scratch is sent from until the wait.
          state->inFlight = true;
          started->release = [state] { state->inFlight = false; };
        }
        *request = trackRequest(std::move(started));
        return GRADCOMM_OK;
      });
}
