//===- ScaleCom.cpp - CLT-k compression, sparse reduce, memory update -----===//
//
// Part of the GradComm project.
//
// docs/design/architecture.md section 2. Validate, let the backend prepare
// (the non-finite scan; on the CPU the leader's selection too), agree,
// dispatch, count. The CPU backend's side is src/cpu/CpuCompress.cpp.
//
//===----------------------------------------------------------------------===//

#include "CompressSteps.h"
#include "Kernels.h"
#include "Wire.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>

using namespace gradcomm;

// The steps every compressing entry point shares (CompressSteps.h).

gradcomm_status gradcomm::validateCompress(const Call &call,
                                           const CompressArgs &args) {
  GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", args.state));
  GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, args.count, args.k));
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "grad", args.grad));
  if (args.segments > 0 && args.selection != GRADCOMM_SELECT_EXACT)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "a selection per segment is exact (chunks cannot be "
                     "cut at the segments)");
  if (args.selection == GRADCOMM_SELECT_CHUNK) {
    GRADCOMM_RETURN_IF_ERROR(
        requireRange(call, "chunk_size", args.chunkSize, 1, args.count));
    int64_t expected = (args.count + args.chunkSize - 1) / args.chunkSize;
    if (args.k != expected)
      return call.fail(
          GRADCOMM_ERR_INVALID_ARGUMENT,
          "'k' must be ceil(count / chunk_size) = " + std::to_string(expected) +
              " with chunk selection, got " + std::to_string(args.k));
  } else if (args.selection != GRADCOMM_SELECT_EXACT) {
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "unknown selection " +
                         std::to_string(static_cast<int>(args.selection)));
  }
  if (args.segments == 0)
    return GRADCOMM_OK;
  // Segments: consecutive runs covering the tensor, k their k's sum.
  GRADCOMM_RETURN_IF_ERROR(
      requirePointer(call, "segment_ends", args.segmentEnds));
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "segment_k", args.segmentK));
  int64_t begin = 0, k = 0;
  for (int64_t s = 0; s < args.segments; ++s) {
    const int64_t end = args.segmentEnds[s], length = end - begin;
    const std::string which = "segment " + std::to_string(s);
    if (end <= begin || end > args.count)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       which + " ends at " + std::to_string(end) +
                           ": the ends must increase strictly up to count (" +
                           std::to_string(args.count) + ")");
    if (args.segmentK[s] < 0 || args.segmentK[s] > length)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       which + "'s k must be in [0, " + std::to_string(length) +
                           "], got " + std::to_string(args.segmentK[s]));
    k += args.segmentK[s];
    begin = end;
  }
  if (begin != args.count)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "the segments cover " + std::to_string(begin) +
                         " of the " + std::to_string(args.count) + " elements");
  if (k != args.k)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "the segments' k sum to " + std::to_string(k) +
                         ", not k = " + std::to_string(args.k));
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::validateBeta(const Call &call, float beta) {
  if (!(beta > 0.0f && beta <= 1.0f))
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "'beta' must be in (0, 1], got " + std::to_string(beta));
  return GRADCOMM_OK;
}

/// What every rank of a compression must agree on.
std::vector<CheckField> gradcomm::compressFields(const CompressArgs &args,
                                                 const State &state) {
  std::vector<CheckField> fields = {
      {"count", args.count},
      {"k", args.k},
      {"selection", args.selection},
      {"chunk_size",
       args.selection == GRADCOMM_SELECT_CHUNK ? args.chunkSize : 0},
      {"step", static_cast<int64_t>(state.step)}};
  if (args.segments > 0) {
    // FNV-1a of the ends and k's, in 62 bits.
    const size_t bytes = sizeof(int64_t) * args.segments;
    const uint64_t hash = fnv1a(args.segmentEnds, bytes) ^
                          (fnv1a(args.segmentK, bytes) * 1099511628211ull);
    fields.push_back(
        {"the segments (ends and k)", static_cast<int64_t>(hash >> 2)});
  }
  return fields;
}

/// The step as the backend sees it.
CompressStep gradcomm::stepOf(const CompressArgs &args, State &state) {
  return {state,
          args.grad,
          args.count,
          args.k,
          args.selection,
          args.selection == GRADCOMM_SELECT_CHUNK ? args.chunkSize : 0,
          static_cast<int>(state.step % context().size),
          args.wire,
          args.segmentEnds,
          args.segmentK,
          args.segments};
}

/// The backend's preparation and the agreement (with the leader's indices
/// in its message when they fold). `*skipped`: the non-finite policy
/// skipped the call, nothing was selected or written.
gradcomm_status gradcomm::prepareAndAgree(const Call &call,
                                          const CompressArgs &args,
                                          const CompressStep &step,
                                          const std::vector<CheckField> &extra,
                                          Prepared &prepared, bool *skipped) {
  // A rank whose preparation failed still joins the agreement: every rank
  // then fails with its message.
  gradcomm_status local = backend().prepareCompress(call, step, prepared);
  std::vector<CheckField> fields = compressFields(args, step.state);
  fields.insert(fields.end(), extra.begin(), extra.end());
  const AgreementPayload payload{step.leader, prepared.sent.data(),
                                 prepared.payloadBytes,
                                 prepared.received.data()};
  // Nothing is written before every rank agrees and all gradients are
  // finite.
  gradcomm_status agreed =
      checkConsistency(call, fields, prepared.nonFinite, local,
                       prepared.foldsIndices() ? &payload : nullptr);
  *skipped = skippedNonFinite(agreed, args.state);
  return *skipped ? GRADCOMM_OK : agreed;
}

/// The index broadcast's bytes: as the backend codes them (indexCoding).
/// Indices folded into the agreement count as the same bytes, in no
/// message of their own.
void gradcomm::countCompress(gradcomm_op_stats &stats, const CompressStep &step,
                             bool foldsIndices) {
  countIndexBroadcast(stats, backend().indexCoding(step).bytes(),
                      context().size, !foldsIndices);
}

void gradcomm::countIndexBroadcast(gradcomm_op_stats &stats, int64_t codedBytes,
                                   int size, bool ownMessage) {
  const uint64_t bytes = broadcastBytes(codedBytes, size);
  if (ownMessage)
    stats.messages += 1;
  stats.index_bytes_sent += bytes;
  stats.index_bytes_received += bytes;
}

void gradcomm::countValueReduce(gradcomm_op_stats &stats, int64_t k,
                                gradcomm_wire wire) {
  countValueReduce(stats, k, wire, context().size);
}

void gradcomm::countValueReduce(gradcomm_op_stats &stats, int64_t k,
                                gradcomm_wire wire, int size) {
  const uint64_t bytes = allReduceBytes(wireValueBytes(wire) * k, size);
  stats.messages += 1;
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
}

namespace {

/// Checks k indices (on the host, or staged from the device on CUDA) lie
/// in [0, count) and, with `ascending`, increase strictly, as the memory
/// update's single merge pass needs.
gradcomm_status validateIndices(const Call &call, const int64_t *indices,
                                int64_t k, int64_t count, bool ascending) {
  std::vector<uint8_t> staging;
  const void *view = nullptr;
  GRADCOMM_RETURN_IF_ERROR(
      hostView(call, indices, sizeof(int64_t) * k, staging, &view));
  const int64_t *host = static_cast<const int64_t *>(view);
  for (int64_t j = 0; j < k; ++j) {
    bool inRange = host[j] >= 0 && host[j] < count;
    if (ascending && (!inRange || (j > 0 && host[j] <= host[j - 1])))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "indices must be ascending and in [0, " +
                           std::to_string(count) + "); position " +
                           std::to_string(j) + " holds " +
                           std::to_string(host[j]));
    if (!inRange)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "index " + std::to_string(host[j]) + " at position " +
                           std::to_string(j) + " is outside [0, " +
                           std::to_string(count) + ")");
  }
  // A repeated index would make the scatter's result depend on the order
  // of the writes (a race on the GPU): refused, whatever the order. Indices
  // from compress increase strictly, which already rules repeats out; only
  // another order needs the sort.
  if (!ascending &&
      std::adjacent_find(host, host + k, std::greater_equal<int64_t>()) !=
          host + k) {
    static thread_local std::vector<int64_t> sorted;
    sorted.assign(host, host + k);
    std::sort(sorted.begin(), sorted.end());
    auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
    if (repeated != sorted.end())
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "index " + std::to_string(*repeated) +
                           " appears more than once");
  }
  return GRADCOMM_OK;
}

/// The unfused compress skipped by the non-finite policy: zero values at
/// indices 0..k-1 (valid for the ops that follow, so sparse_all_reduce
/// gives zeros), and the memory update of this step becomes a no-op.
gradcomm_status skipCompress(const Call &call, State &state, int64_t k,
                             float *values, int64_t *indices) {
  state.skippedStep = true;
  std::vector<int64_t> first(k);
  std::iota(first.begin(), first.end(), int64_t(0));
  GRADCOMM_RETURN_IF_ERROR(
      backend().copyFromHost(call, indices, first.data(), sizeof(int64_t) * k));
  return zeroBuffer(call, values, k);
}

} // namespace

bool gradcomm::overlaps(const float *a, const float *b, int64_t count) {
  return a < b + count && b < a + count;
}

namespace {

/// The fused step's arguments, as the blocking and started forms take them.
struct ScalecomCall {
  CompressArgs args;
  float *out;
  float beta;
  gradcomm_reduction reduction;
};

/// The blocking and started forms' common part: arguments and state, the
/// backend's preparation and the agreement. `*skipped`: the non-finite
/// policy zeroed `out` and changed nothing else.
gradcomm_status beginScalecom(const Call &call, const ScalecomCall &c,
                              State *&state, Prepared &prepared, bool *skipped,
                              std::vector<CheckField> extra = {}) {
  const CompressArgs &args = c.args;
  *skipped = false;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(validateCompress(call, args));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "out", c.out));
    GRADCOMM_RETURN_IF_ERROR(validateBeta(call, c.beta));
    GRADCOMM_RETURN_IF_ERROR(requireReduction(call, c.reduction));
    if (overlaps(args.grad, c.out, args.count))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "'grad' and 'out' overlap");
    return lookupIdleState(call, args.state, args.count, state);
  }));
  extra.push_back({"beta", floatBits(c.beta)});
  extra.push_back({"reduction", c.reduction});
  GRADCOMM_RETURN_IF_ERROR(prepareAndAgree(call, args, stepOf(args, *state),
                                           extra, prepared, skipped));
  if (*skipped)
    return zeroBuffer(call, c.out, args.count);
  return GRADCOMM_OK;
}

/// The counters of one fused step.
void countScalecom(const char *stateName, const CompressStep &step,
                   bool foldsIndices, double start) {
  gradcomm_op_stats &stats = opStats(stateName);
  stats.calls += 1;
  countCompress(stats, step, foldsIndices);
  countValueReduce(stats, step.k, step.wire);
  stats.seconds += now() - start;
}

} // namespace

gradcomm_status gradcomm_scalecom_f32(const char *stateName, const float *grad,
                                      float *out, int64_t count, int64_t k,
                                      gradcomm_selection selection,
                                      int64_t chunkSize, float beta,
                                      gradcomm_reduction reduction) {
  return guarded("scalecom_f32", stateName, [&](const Call &call) {
    const ScalecomCall c{{stateName, grad, count, k, selection, chunkSize},
                         out,
                         beta,
                         reduction};
    const double start = now();
    State *state = nullptr;
    Prepared prepared;
    bool skipped = false;
    GRADCOMM_RETURN_IF_ERROR(beginScalecom(call, c, state, prepared, &skipped));
    if (skipped)
      return GRADCOMM_OK;
    const CompressStep step = stepOf(c.args, *state);
    GRADCOMM_RETURN_IF_ERROR(backend().scalecom(
        call, step, prepared, beta, reduction == GRADCOMM_REDUCE_AVERAGE, out));
    state->step += 1;
    countScalecom(stateName, step, prepared.foldsIndices(), start);
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_scalecom_start_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_selection selection, int64_t chunkSize, float beta,
    gradcomm_reduction reduction, gradcomm_request *request) {
  return guarded("scalecom_start_f32", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(requireStartable(
        call, request, StartedForm::Scalecom, "gradcomm_scalecom_f32"));
    const ScalecomCall c{{stateName, grad, count, k, selection, chunkSize},
                         out,
                         beta,
                         reduction};
    const double start = now();
    State *state = nullptr;
    Prepared prepared;
    bool skipped = false;
    GRADCOMM_RETURN_IF_ERROR(beginScalecom(call, c, state, prepared, &skipped));
    auto started = std::make_unique<gradcomm_request_s>();
    started->opName = stateName;
    started->skipped = skipped;
    if (!skipped) {
      const CompressStep step = stepOf(c.args, *state);
      GRADCOMM_RETURN_IF_ERROR(backend().startScalecom(
          call, step, prepared, beta, reduction == GRADCOMM_REDUCE_AVERAGE, out,
          *started));
      state->step += 1;
      // The names the counters use outlive the caller's string: the
      // request keeps a copy.
      alsoFinish(*started,
                 [name = started->opName, step, folds = prepared.foldsIndices(),
                  start] { countScalecom(name.c_str(), step, folds, start); });
      state->inFlight = true;
      alsoRelease(*started, [state] { state->inFlight = false; });
    }
    *request = trackRequest(std::move(started));
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_cltk_compress_f32(const char *stateName,
                                           const float *grad, int64_t count,
                                           int64_t k,
                                           gradcomm_selection selection,
                                           int64_t chunkSize, float *values,
                                           int64_t *indices) {
  return guarded("cltk_compress_f32", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    CompressArgs args{stateName, grad, count, k, selection, chunkSize};
    State *state = nullptr;
    GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
      GRADCOMM_RETURN_IF_ERROR(validateCompress(call, args));
      GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "values", values));
      GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "indices", indices));
      return lookupState(call, stateName, count, state);
    }));
    double start = now();
    state->skippedStep = false;
    const CompressStep step = stepOf(args, *state);
    Prepared prepared;
    bool skipped = false;
    GRADCOMM_RETURN_IF_ERROR(
        prepareAndAgree(call, args, step, {}, prepared, &skipped));
    if (skipped)
      return skipCompress(call, *state, k, values, indices);
    GRADCOMM_RETURN_IF_ERROR(
        backend().compress(call, step, prepared, values, indices));
    gradcomm_op_stats &stats = opStats(stateName);
    stats.calls += 1;
    countCompress(stats, step, prepared.foldsIndices());
    stats.seconds += now() - start;
    return GRADCOMM_OK;
  });
}

namespace {

/// The blocking and started sparse all-reduces' common part: arguments
/// and agreement.
gradcomm_status beginSparseAllReduce(const Call &call, const float *values,
                                     const int64_t *indices, int64_t k,
                                     float *out, int64_t count,
                                     gradcomm_reduction reduction) {
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, k));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "values", values));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "indices", indices));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "out", out));
    GRADCOMM_RETURN_IF_ERROR(requireReduction(call, reduction));
    return validateIndices(call, indices, k, count, /*ascending=*/false);
  }));
  return checkConsistency(
      call, {{"count", count}, {"k", k}, {"reduction", reduction}}, false);
}

void countSparseAllReduce(const char *opName, int64_t k, double start) {
  gradcomm_op_stats &stats = opStats(opName);
  stats.calls += 1;
  countValueReduce(stats, k);
  stats.seconds += now() - start;
}

} // namespace

gradcomm_status
gradcomm_sparse_all_reduce_f32(const char *opName, const float *values,
                               const int64_t *indices, int64_t k, float *out,
                               int64_t count, gradcomm_reduction reduction) {
  return guarded("sparse_all_reduce_f32", opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(
        beginSparseAllReduce(call, values, indices, k, out, count, reduction));
    double start = now();
    GRADCOMM_RETURN_IF_ERROR(
        backend().sparseAllReduce(call, values, indices, k, out, count,
                                  reduction == GRADCOMM_REDUCE_AVERAGE));
    countSparseAllReduce(opName, k, start);
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_sparse_all_reduce_start_f32(
    const char *opName, const float *values, const int64_t *indices, int64_t k,
    float *out, int64_t count, gradcomm_reduction reduction,
    gradcomm_request *request) {
  return guarded("sparse_all_reduce_start_f32", opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(
        requireStartable(call, request, StartedForm::SparseAllReduce,
                         "gradcomm_sparse_all_reduce_f32"));
    GRADCOMM_RETURN_IF_ERROR(
        beginSparseAllReduce(call, values, indices, k, out, count, reduction));
    const double start = now();
    auto started = std::make_unique<gradcomm_request_s>();
    started->opName = opName ? opName : "";
    GRADCOMM_RETURN_IF_ERROR(backend().startSparseAllReduce(
        call, values, indices, k, out, count,
        reduction == GRADCOMM_REDUCE_AVERAGE, *started));
    alsoFinish(*started, [name = started->opName, k, start] {
      countSparseAllReduce(name.c_str(), k, start);
    });
    *request = trackRequest(std::move(started));
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_memory_update_f32(const char *stateName,
                                           const float *grad, int64_t count,
                                           const int64_t *indices, int64_t k,
                                           float beta) {
  return guarded("memory_update_f32", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
    GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, k));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "grad", grad));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "indices", indices));
    GRADCOMM_RETURN_IF_ERROR(validateBeta(call, beta));
    GRADCOMM_RETURN_IF_ERROR(
        validateIndices(call, indices, k, count, /*ascending=*/true));
    State *state;
    GRADCOMM_RETURN_IF_ERROR(lookupState(call, stateName, count, state));
    if (state->skippedStep) {
      // Its compress was skipped (non-finite policy skip): memory and
      // step stay as they were, as in the fused step.
      state->skippedStep = false;
      return GRADCOMM_OK;
    }
    GRADCOMM_RETURN_IF_ERROR(
        backend().memoryUpdate(call, *state, grad, count, indices, k, beta));
    state->step += 1;
    return GRADCOMM_OK;
  });
}

//===----------------------------------------------------------------------===//
// The recipe: clipping, momentum correction, warm-up, dense layers around
// the fused step (ALGORITHMS.md, "Making sparsified training hold").
//===----------------------------------------------------------------------===//

void gradcomm_scalecom_options_init(gradcomm_scalecom_options *options,
                                    int64_t k) {
  if (!options)
    return;
  *options = gradcomm_scalecom_options{};
  options->k = k;
  options->selection = GRADCOMM_SELECT_EXACT;
  // The recipe the study in docs/results.md chose (docs/scalecom.md).
  options->beta = 0.5f;
  options->warmup_steps = 100;
  options->warmup = GRADCOMM_WARMUP_DENSE;
  options->warmup_start_ratio = 4.0f;
}

namespace gradcomm {

gradcomm_status validateRecipe(const Call &call,
                               const gradcomm_scalecom_options *o) {
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "options", o));
  auto bad = [&](const std::string &what) {
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, what);
  };
  if (!(o->momentum >= 0.0f && o->momentum < 1.0f))
    return bad("'momentum' must be in [0, 1), got " +
               std::to_string(o->momentum));
  if (o->nesterov != 0 && (o->nesterov != 1 || o->momentum == 0.0f))
    return bad("'nesterov' must be 0, or 1 with momentum > 0");
  if (!(o->clip >= 0.0f && o->clip < INFINITY))
    return bad("'clip' must be finite and >= 0, got " +
               std::to_string(o->clip));
  if (o->warmup_steps < 0)
    return bad("'warmup_steps' must be >= 0");
  if (o->warmup != GRADCOMM_WARMUP_DENSE && o->warmup != GRADCOMM_WARMUP_RAMP)
    return bad("unknown warmup " + std::to_string(o->warmup));
  if (o->warmup == GRADCOMM_WARMUP_RAMP &&
      (o->selection != GRADCOMM_SELECT_EXACT ||
       !(o->warmup_start_ratio >= 1.0f)))
    return bad("a ramp warm-up needs exact selection and "
               "'warmup_start_ratio' >= 1");
  if (o->dense != 0 && o->dense != 1)
    return bad("'dense' must be 0 or 1");
  if (o->keep_velocity != 0 && (o->keep_velocity != 1 || o->momentum == 0.0f))
    return bad("'keep_velocity' must be 0, or 1 with momentum > 0, got " +
               std::to_string(o->keep_velocity));
  return requireWireOnHostOrDevice(call, o->wire);
}

/// The recipe's options in the agreement (beside ScaleCom's fields or the
/// dense all-reduce's): one hash of them all, as the agreement has few
/// slots left, so that a dense warm-up step refuses options that differ
/// across ranks as a compressed step would.
std::vector<CheckField> recipeFields(const gradcomm_scalecom_options &o) {
  const int64_t fields[] = {o.k,
                            o.selection,
                            o.chunk_size,
                            floatBits(o.beta),
                            floatBits(o.momentum),
                            o.nesterov,
                            floatBits(o.clip),
                            o.warmup_steps,
                            o.warmup,
                            floatBits(o.warmup_start_ratio),
                            o.dense,
                            o.wire,
                            o.keep_velocity};
  return {{"the recipe's options (k, selection, beta, momentum, clip, "
           "warm-up, dense, wire, keep_velocity)",
           static_cast<int64_t>(fnv1a(fields, sizeof(fields)) >> 1)}};
}

bool denseStep(const gradcomm_scalecom_options &o, uint64_t step) {
  return o.dense || (static_cast<int64_t>(step) < o.warmup_steps &&
                     o.warmup == GRADCOMM_WARMUP_DENSE);
}

/// k of this step: a ramp warm-up sends ceil(count / r_t) with
/// r_t = s (R / s)^(t / W), R = count / k and s = min(start ratio, R);
/// never fewer than k.
int64_t stepK(const gradcomm_scalecom_options &o, int64_t count,
              uint64_t step) {
  if (o.warmup != GRADCOMM_WARMUP_RAMP ||
      static_cast<int64_t>(step) >= o.warmup_steps)
    return o.k;
  const double target = static_cast<double>(count) / o.k;
  const double start = std::min<double>(o.warmup_start_ratio, target);
  const double ratio =
      start * std::pow(target / start, static_cast<double>(step) /
                                           static_cast<double>(o.warmup_steps));
  const auto k = static_cast<int64_t>(std::ceil(count / ratio));
  return std::clamp<int64_t>(k, o.k, count);
}

/// What this step communicates: `grad`, clipped, through the velocity.
/// Writes the velocity's nextVelocity (u') and state.recipeInput when they
/// are needed; the velocity itself is committed after the step.
const float *recipeInput(const gradcomm_scalecom_options &o, const float *grad,
                         int64_t count, State &state, State *velocity,
                         std::optional<uint32_t> *scan) {
  const float *input = grad;
  if (o.clip > 0.0f) {
    double squares = 0.0;
    for (int64_t i = 0; i < count; ++i)
      squares += static_cast<double>(grad[i]) * grad[i];
    const double norm = std::sqrt(squares);
    if (norm > o.clip) { // else the gradient goes on as it is, uncopied
      const auto scale = static_cast<float>(o.clip / norm);
      state.recipeInput.resize(count);
      for (int64_t i = 0; i < count; ++i)
        state.recipeInput[i] = grad[i] * scale;
      input = state.recipeInput.data();
    }
  }
  if (!velocity)
    return input;
  const float mu = o.momentum;
  const float *u = velocity->data();
  float *next = velocity->nextVelocity.data();
  if (scan && !o.nesterov) {
    *scan = cpu::velocityAndMaxKeySum(u, input, mu, state.data(), next, count);
    return next;
  }
  for (int64_t i = 0; i < count; ++i)
    next[i] = mu * u[i] + input[i];
  if (o.nesterov) {
    state.recipeInput.resize(count);
    for (int64_t i = 0; i < count; ++i)
      state.recipeInput[i] = input[i] + mu * next[i];
    return state.recipeInput.data();
  }
  return next;
}

void commitVelocity(const State &state, State *velocity, bool masked) {
  if (!velocity)
    return;
  // u' becomes the velocity; the old one is the next step's scratch. What
  // the step communicated from u' was read before this (the started forms
  // select, update and gather when they start).
  velocity->memory.swap(velocity->nextVelocity);
  float *u = velocity->data();
  if (masked)
    for (int64_t index : state.indices)
      u[index] = 0.0f;
}

namespace {

/// `memory`, allocated by `owner` for `count` floats unless it already is.
gradcomm_status reserve(const Call &call, const Backend &owner,
                        BackendMemory &memory, int64_t count) {
  if (memory.data())
    return GRADCOMM_OK;
  float *allocated = nullptr;
  GRADCOMM_RETURN_IF_ERROR(owner.allocate(call, count, &allocated));
  memory = BackendMemory(&owner, allocated);
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status reserveNextVelocity(const Call &call, const Backend &host,
                                    State &velocity) {
  return reserve(call, host, velocity.nextVelocity, velocity.count);
}

gradcomm_status reserveDeviceRecipe(const Call &call,
                                    const gradcomm_scalecom_options &o,
                                    int64_t count, State &state,
                                    bool velocity) {
  if (o.clip > 0.0f || (velocity && o.nesterov))
    GRADCOMM_RETURN_IF_ERROR(
        reserve(call, backend(), state.deviceRecipeInput, count));
  if (velocity)
    GRADCOMM_RETURN_IF_ERROR(
        reserve(call, backend(), state.deviceRecipeVelocity, count));
  return GRADCOMM_OK;
}

gradcomm_status deviceRecipeInput(const Call &call,
                                  const gradcomm_scalecom_options &o,
                                  const float *grad, int64_t count,
                                  State &state, const State *velocity,
                                  const float **input) {
  *input = grad;
  float *scratch = state.deviceRecipeInput.data();
  if (o.clip > 0.0f) {
    GRADCOMM_RETURN_IF_ERROR(
        backend().deviceClip(call, grad, scratch, count, o.clip));
    *input = scratch;
  }
  if (!velocity)
    return GRADCOMM_OK;
  // Nesterov's sent values may overwrite the clipped input: each element
  // is read before it is written.
  float *next = state.deviceRecipeVelocity.data();
  float *sent = o.nesterov ? scratch : nullptr;
  GRADCOMM_RETURN_IF_ERROR(backend().deviceVelocity(
      call, velocity->data(), *input, next, sent, count, o.momentum));
  *input = sent ? sent : next;
  return GRADCOMM_OK;
}

std::string velocityName(const char *stateName) {
  return std::string(stateName) + ".velocity";
}

} // namespace gradcomm

namespace {

/// One recipe step's communication, blocking (`started` null) or started.
struct RecipeStep {
  const char *stateName;
  const gradcomm_scalecom_options &o;
  State &state;
  const float *input;
  float *out;
  int64_t count;
  gradcomm_reduction reduction;
  double start;
  gradcomm_request_s *started;
  /// The non-finite scan of |m + input|, when recipeInput took it.
  std::optional<uint32_t> inputScan;
};

/// The CPU backend scans |m + g| before a compressed step's agreement in
/// a pass of its own (CpuBackend::prepareCompress), except on an exact
/// selection's leader, whose selection takes it: there the velocity's
/// pass can take it instead and save that pass.
bool hostScansSeparately(const gradcomm_scalecom_options &o,
                         const State &state) {
  if (!scanForNonFinite() || denseStep(o, state.step))
    return false;
  const auto leader = static_cast<int>(state.step % context().size);
  return o.selection != GRADCOMM_SELECT_EXACT || context().rank != leader;
}

/// out = input, both in the backend's memory (through the host on a
/// device: a dense warm-up step's copy, off the hot path).
gradcomm_status copyTensor(const Call &call, float *out, const float *input,
                           int64_t count) {
  if (backend().tensorsOnHost()) {
    std::copy(input, input + count, out);
    return GRADCOMM_OK;
  }
  std::vector<float> staging(count);
  const size_t bytes = sizeof(float) * count;
  GRADCOMM_RETURN_IF_ERROR(
      backend().copyToHost(call, staging.data(), input, bytes));
  return backend().copyFromHost(call, out, staging.data(), bytes);
}

/// The dense all-reduce of the input (a dense layer, a dense warm-up
/// step). `*ran`: false when the non-finite policy skipped it.
gradcomm_status recipeDense(const Call &call, const RecipeStep &s, bool *ran) {
  std::vector<CheckField> fields = recipeFields(s.o);
  fields.push_back({"step", static_cast<int64_t>(s.state.step)});
  fields.push_back({"count", s.count});
  fields.push_back({"reduction", s.reduction});
  GRADCOMM_RETURN_IF_ERROR(copyTensor(call, s.out, s.input, s.count));
  gradcomm_status agreed = checkConsistencyOfInput(
      call, s.out, s.count, wireInputLimit(s.o.wire, /*summed=*/true), fields);
  if (skippedNonFinite(agreed, s.stateName))
    return zeroBuffer(call, s.out, s.count);
  GRADCOMM_RETURN_IF_ERROR(agreed);
  auto countDense = [name = std::string(s.stateName), count = s.count,
                     start = s.start, wire = s.o.wire] {
    gradcomm_op_stats &stats = opStats(name.c_str());
    stats.calls += 1;
    countValueReduce(stats, count, wire);
    stats.seconds += now() - start;
  };
  const bool average = s.reduction == GRADCOMM_REDUCE_AVERAGE;
  if (s.started) {
    GRADCOMM_RETURN_IF_ERROR(startDenseAllReduceWire(
        call, s.out, s.count, average, s.o.wire, *s.started));
    alsoFinish(*s.started, countDense);
  } else {
    GRADCOMM_RETURN_IF_ERROR(
        denseAllReduceWire(call, s.out, s.count, average, s.o.wire));
    countDense();
  }
  *ran = true;
  return GRADCOMM_OK;
}

/// The ScaleCom step on the input with this step's k.
gradcomm_status recipeCompressed(const Call &call, const RecipeStep &s,
                                 bool *ran) {
  const int64_t k = stepK(s.o, s.count, s.state.step);
  const ScalecomCall c{{s.stateName, s.input, s.count, k, s.o.selection,
                        s.o.chunk_size, s.o.wire},
                       s.out,
                       s.o.beta,
                       s.reduction};
  Prepared prepared;
  prepared.inputScan = s.inputScan;
  bool skipped = false;
  State *state = &s.state;
  GRADCOMM_RETURN_IF_ERROR(
      beginScalecom(call, c, state, prepared, &skipped, recipeFields(s.o)));
  if (skipped)
    return GRADCOMM_OK;
  const CompressStep step = stepOf(c.args, s.state);
  const bool average = s.reduction == GRADCOMM_REDUCE_AVERAGE;
  if (s.started) {
    GRADCOMM_RETURN_IF_ERROR(backend().startScalecom(
        call, step, prepared, s.o.beta, average, s.out, *s.started));
    alsoFinish(*s.started, [name = s.started->opName, step,
                            folds = prepared.foldsIndices(), start = s.start] {
      countScalecom(name.c_str(), step, folds, start);
    });
  } else {
    GRADCOMM_RETURN_IF_ERROR(
        backend().scalecom(call, step, prepared, s.o.beta, average, s.out));
    countScalecom(s.stateName, step, prepared.foldsIndices(), s.start);
  }
  *ran = true;
  return GRADCOMM_OK;
}

/// The blocking and started forms. `request` null: blocking.
gradcomm_status scalecomRecipe(const Call &call, const char *stateName,
                               const float *grad, float *out, int64_t count,
                               const gradcomm_scalecom_options *options,
                               gradcomm_reduction reduction,
                               gradcomm_request *request) {
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  State *state = nullptr;
  State *velocity = nullptr;
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(validateRecipe(call, options));
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
    GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, options->k));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "grad", grad));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "out", out));
    GRADCOMM_RETURN_IF_ERROR(requireReduction(call, reduction));
    if (overlaps(grad, out, count))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "'grad' and 'out' overlap");
    if (options->momentum > 0.0f)
      GRADCOMM_RETURN_IF_ERROR(lookupIdleState(
          call, velocityName(stateName).c_str(), count, velocity));
    GRADCOMM_RETURN_IF_ERROR(lookupIdleState(call, stateName, count, state));
    // The scratch is allocated here, so a rank that cannot fails with the
    // others.
    if (!backend().tensorsOnHost())
      return reserveDeviceRecipe(call, *options, count, *state,
                                 velocity != nullptr);
    return velocity ? reserveNextVelocity(call, backend(), *velocity)
                    : GRADCOMM_OK;
  }));
  auto started = request ? std::make_unique<gradcomm_request_s>() : nullptr;
  if (started)
    started->opName = stateName;
  const bool onHost = backend().tensorsOnHost();
  const float *input = nullptr;
  std::optional<uint32_t> inputScan;
  if (onHost)
    input = recipeInput(*options, grad, count, *state, velocity,
                        hostScansSeparately(*options, *state) ? &inputScan
                                                              : nullptr);
  else
    GRADCOMM_RETURN_IF_ERROR(deviceRecipeInput(call, *options, grad, count,
                                               *state, velocity, &input));
  const RecipeStep step{stateName, *options,  *state, input,         out,
                        count,     reduction, now(),  started.get(), inputScan};
  const bool dense = denseStep(*options, state->step);
  bool ran = false; // false: the non-finite policy skipped the step
  GRADCOMM_RETURN_IF_ERROR(dense ? recipeDense(call, step, &ran)
                                 : recipeCompressed(call, step, &ran));
  if (ran) {
    // A compressed step on the CPU backend leaves the leader's indices in
    // state.indices, a device backend keeps them for its commit: the
    // velocity is masked there.
    if (onHost)
      commitVelocity(*state, velocity, masksVelocity(*options, !dense));
    else if (velocity)
      GRADCOMM_RETURN_IF_ERROR(backend().deviceCommitVelocity(
          call, velocity->data(), state->deviceRecipeVelocity.data(), count,
          masksVelocity(*options, !dense)));
    state->step += 1;
  }
  if (started) {
    started->skipped = !ran;
    if (ran) {
      state->inFlight = true;
      alsoRelease(*started, [state] { state->inFlight = false; });
    }
    *request = trackRequest(std::move(started));
  }
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_scalecom_recipe_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    const gradcomm_scalecom_options *options, gradcomm_reduction reduction) {
  return guarded("scalecom_recipe_f32", stateName, [&](const Call &call) {
    return scalecomRecipe(call, stateName, grad, out, count, options, reduction,
                          nullptr);
  });
}

gradcomm_status gradcomm_scalecom_recipe_start_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    const gradcomm_scalecom_options *options, gradcomm_reduction reduction,
    gradcomm_request *request) {
  return guarded("scalecom_recipe_start_f32", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(requireStartable(
        call, request, StartedForm::Scalecom, "gradcomm_scalecom_recipe_f32"));
    return scalecomRecipe(call, stateName, grad, out, count, options, reduction,
                          request);
  });
}
