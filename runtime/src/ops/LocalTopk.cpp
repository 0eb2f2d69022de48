//===- LocalTopk.cpp - Local top-k + all-gather baseline ------------------===//
//
// Part of the GradComm project.
//
// Every rank picks its own top-k, so the sparse vectors cannot be summed by
// an all-reduce: values and indices are all-gathered (traffic grows with n)
// and summed in rank order, so every rank computes the same bits.
//
//===----------------------------------------------------------------------===//

#include "CompressSteps.h"
#include "Wire.h"

#include <algorithm>
#include <memory>
#include <vector>

using namespace gradcomm;

/// The step's bookkeeping, common to both backends: counter, union size,
/// bytes (ring all-gather: each rank sends and receives n - 1 blocks).
static gradcomm_status finishLocalTopk(State &state, const char *stateName,
                                       int64_t k, gradcomm_wire wire,
                                       int64_t distinct, int64_t *unionSize,
                                       double start) {
  if (unionSize)
    *unionSize = distinct;
  state.step += 1;
  gradcomm_op_stats &stats = opStats(stateName);
  countLocalTopk(stats, k, wire, context().size, distinct);
  stats.seconds += now() - start;
  return GRADCOMM_OK;
}

void gradcomm::countLocalTopk(gradcomm_op_stats &stats, int64_t k,
                              gradcomm_wire wire, int size, int64_t distinct) {
  const uint64_t blocks = static_cast<uint64_t>(size - 1);
  stats.calls += 1;
  stats.messages += 2;
  stats.value_bytes_sent += blocks * k * wireValueBytes(wire);
  stats.value_bytes_received += blocks * k * wireValueBytes(wire);
  stats.index_bytes_sent += blocks * k * sizeof(int64_t);
  stats.index_bytes_received += blocks * k * sizeof(int64_t);
  stats.last_union_size = distinct;
}

/// Every rank selects its own k: no leader.
static CompressStep stepOf(State &state, const float *grad, int64_t count,
                           int64_t k, gradcomm_wire wire) {
  return {state, grad, count, k, GRADCOMM_SELECT_EXACT, 0, -1, wire};
}

namespace {

/// The blocking and started forms' common part: arguments and state, the
/// backend's preparation (on the CPU, this rank's own selection, which the
/// non-finite scan rides along) and the agreement. `*skipped`: the
/// non-finite policy zeroed `out`, changed nothing else.
gradcomm_status beginLocalTopk(const Call &call, const char *stateName,
                               const float *grad, float *out, int64_t count,
                               int64_t k, gradcomm_wire wire,
                               gradcomm_reduction reduction, State *&state,
                               bool *skipped) {
  *skipped = false;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  const Context &ctx = context();
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
    GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, k));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "grad", grad));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "out", out));
    GRADCOMM_RETURN_IF_ERROR(requireReduction(call, reduction));
    GRADCOMM_RETURN_IF_ERROR(requireWireOnHostOrDevice(call, wire));
    // The all-gathered buffers hold n * k entries; MPI counts are int.
    // (Compared by division: k * n can overflow int64.)
    if (k > INT32_MAX / ctx.size)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "k * ranks (" + std::to_string(k) + " * " +
                           std::to_string(ctx.size) +
                           ") exceeds the all-gather limit 2^31 - 1");
    return lookupIdleState(call, stateName, count, state);
  }));
  Prepared prepared;
  // A rank whose preparation failed still joins the agreement: every rank
  // then fails with its message.
  gradcomm_status local = backend().prepareLocalTopk(
      call, stepOf(*state, grad, count, k, wire), prepared);
  gradcomm_status agreed =
      checkConsistency(call,
                       {{"count", count},
                        {"k", k},
                        {"reduction", reduction},
                        {"wire", wire},
                        {"step", static_cast<int64_t>(state->step)}},
                       prepared.nonFinite, local);
  if ((*skipped = skippedNonFinite(agreed, stateName)))
    return zeroBuffer(call, out, count);
  return agreed;
}

} // namespace

namespace {

gradcomm_status localTopk(const Call &call, const char *stateName,
                          const float *grad, float *out, int64_t count,
                          int64_t k, gradcomm_wire wire,
                          gradcomm_reduction reduction, int64_t *unionSize) {
  const double start = now();
  State *state = nullptr;
  bool skipped = false;
  GRADCOMM_RETURN_IF_ERROR(beginLocalTopk(call, stateName, grad, out, count, k,
                                          wire, reduction, state, &skipped));
  if (skipped) {
    if (unionSize)
      *unionSize = 0;
    return GRADCOMM_OK;
  }
  int64_t distinct = 0;
  GRADCOMM_RETURN_IF_ERROR(backend().localTopk(
      call, stepOf(*state, grad, count, k, wire),
      reduction == GRADCOMM_REDUCE_AVERAGE, out, &distinct));
  return finishLocalTopk(*state, stateName, k, wire, distinct, unionSize,
                         start);
}

gradcomm_status startLocalTopk(const Call &call, const char *stateName,
                               const float *grad, float *out, int64_t count,
                               int64_t k, gradcomm_wire wire,
                               gradcomm_reduction reduction,
                               gradcomm_request *request) {
  GRADCOMM_RETURN_IF_ERROR(
      requireStartable(call, request, StartedForm::LocalTopk,
                       "gradcomm_local_topk_all_gather_f32"));
  const double start = now();
  State *state = nullptr;
  bool skipped = false;
  GRADCOMM_RETURN_IF_ERROR(beginLocalTopk(call, stateName, grad, out, count, k,
                                          wire, reduction, state, &skipped));
  auto started = std::make_unique<gradcomm_request_s>();
  started->opName = stateName;
  started->skipped = skipped;
  if (!skipped) {
    GRADCOMM_RETURN_IF_ERROR(backend().startLocalTopk(
        call, stepOf(*state, grad, count, k, wire),
        reduction == GRADCOMM_REDUCE_AVERAGE, out, *started,
        [name = started->opName, state, k, wire, start](int64_t distinct) {
          finishLocalTopk(*state, name.c_str(), k, wire, distinct, nullptr,
                          start);
        }));
    // The state's scratch is sent from until the wait.
    state->inFlight = true;
    alsoRelease(*started, [state] { state->inFlight = false; });
  }
  *request = trackRequest(std::move(started));
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_local_topk_all_gather_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_reduction reduction, int64_t *unionSize) {
  return guarded("local_topk_all_gather_f32", stateName, [&](const Call &call) {
    return localTopk(call, stateName, grad, out, count, k, GRADCOMM_WIRE_F32,
                     reduction, unionSize);
  });
}

gradcomm_status gradcomm_local_topk_all_gather_wire_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_wire wire, gradcomm_reduction reduction,
    int64_t *unionSize) {
  return guarded("local_topk_all_gather_wire_f32", stateName,
                 [&](const Call &call) {
                   return localTopk(call, stateName, grad, out, count, k, wire,
                                    reduction, unionSize);
                 });
}

gradcomm_status gradcomm_local_topk_all_gather_start_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_reduction reduction, gradcomm_request *request) {
  return guarded("local_topk_all_gather_start_f32", stateName,
                 [&](const Call &call) {
                   return startLocalTopk(call, stateName, grad, out, count, k,
                                         GRADCOMM_WIRE_F32, reduction, request);
                 });
}

gradcomm_status gradcomm_local_topk_all_gather_wire_start_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_wire wire, gradcomm_reduction reduction,
    gradcomm_request *request) {
  return guarded("local_topk_all_gather_wire_start_f32", stateName,
                 [&](const Call &call) {
                   return startLocalTopk(call, stateName, grad, out, count, k,
                                         wire, reduction, request);
                 });
}
