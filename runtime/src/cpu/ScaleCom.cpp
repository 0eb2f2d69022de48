//===- ScaleCom.cpp - CLT-k compression, sparse reduce, memory update -----===//
//
// Part of the GradComm project.
//
// docs/design/architecture.md section 2. The fused entry point streams the
// memory once per step on every rank (gather + low-pass update + zeroing the
// output in one pass); the leader adds its selection pass(es) before it.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "Kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>

using namespace gradcomm;

namespace {

/// Arguments shared by the compress entry points, validated once.
struct CompressArgs {
  const char *state;
  const float *grad;
  int64_t count;
  int64_t k;
  gradcomm_selection selection;
  int64_t chunkSize;
};

gradcomm_status validateCompress(const Call &call, const CompressArgs &args) {
  GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", args.state));
  GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, args.count, args.k));
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "grad", args.grad));
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
  return GRADCOMM_OK;
}

gradcomm_status validateBeta(const Call &call, float beta) {
  if (!(beta > 0.0f && beta <= 1.0f))
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "'beta' must be in (0, 1], got " + std::to_string(beta));
  return GRADCOMM_OK;
}

/// What every rank of a compression must agree on.
std::vector<CheckField> compressFields(const CompressArgs &args,
                                       const State &state) {
  return {{"count", args.count},
          {"k", args.k},
          {"selection", args.selection},
          {"chunk_size",
           args.selection == GRADCOMM_SELECT_CHUNK ? args.chunkSize : 0},
          {"step", static_cast<int64_t>(state.step)}};
}

/// The fused step on the CUDA backend: the same checks, then one call into
/// the backend (device kernels + NCCL). `*skipped` as in
/// selectAndBroadcast.
gradcomm_status cudaScalecom(const Call &call, const CompressArgs &args,
                             State &state, float beta,
                             gradcomm_reduction reduction, float *out,
                             bool *skipped) {
  const Context &ctx = context();
  char error[kErrorSize] = {0};
  std::vector<CheckField> fields = compressFields(args, state);
  fields.push_back({"beta", floatBits(beta)});
  fields.push_back({"reduction", reduction});
  gradcomm_status agreed = checkConsistencyOfInput(
      call, args.grad, args.count, inputLimit(/*summed=*/true), fields);
  if ((*skipped = skippedNonFinite(agreed, args.state)))
    return zeroBuffer(call, out, args.count);
  GRADCOMM_RETURN_IF_ERROR(agreed);
  const int leader = static_cast<int>(state.step % ctx.size);
  GRADCOMM_RETURN_IF_ERROR(cudaStatus(
      call,
      ctx.cuda->scalecom(
          state.device, args.grad, out, args.count, args.k, args.selection,
          args.selection == GRADCOMM_SELECT_CHUNK ? args.chunkSize : 0, beta,
          reduction == GRADCOMM_REDUCE_AVERAGE, leader, error),
      error));
  state.step += 1;
  return GRADCOMM_OK;
}

/// Bytes per index on the wire (CPU backend): the offset inside its chunk
/// (1 or 2 bytes) for chunk selection, int32 below 2^31 elements.
int indexWidth(const CompressArgs &args) {
  return args.selection == GRADCOMM_SELECT_CHUNK
             ? chunkIndexBytes(args.count, args.chunkSize)
             : indexBytes(args.count);
}

/// True when the leader's indices ride in the agreement's message instead
/// of a broadcast of their own (CPU backend, agreement on, and k indices
/// fit in kAgreementPayloadBytes): one collective fewer per call, which is
/// what a small tensor's call costs. Every rank decides the same way once
/// they agree on count, k, selection and chunk size, which the same
/// agreement checks.
bool foldsIndices(const CompressArgs &args) {
  return !usingCuda() && context().consistencyCheck &&
         args.k * indexWidth(args) <=
             static_cast<int64_t>(kAgreementPayloadBytes);
}

/// The leader's selection, the consistency check and the index broadcast:
/// on return `state.indices` holds the leader's k indices on every rank.
/// With `fusedUpdate` (the fused step), the leader's chunk selection also
/// applies the memory update and fills `values` and zeroes `out` in the
/// same pass, and `*updated` says so. `*skipped` is true when the
/// non-finite policy skipped the call (nothing selected or written).
gradcomm_status selectAndBroadcast(const Call &call, const CompressArgs &args,
                                   State &state,
                                   const std::vector<CheckField> &extra,
                                   bool *skipped, float beta = 1.0f,
                                   float *out = nullptr,
                                   bool *updated = nullptr) {
  const Context &ctx = context();
  const int leader = static_cast<int>(state.step % ctx.size);
  const bool isLeader = ctx.rank == leader;
  state.indices.resize(args.k);
  state.values.resize(args.k);
  uint32_t largest = 0;
  if (isLeader && args.selection == GRADCOMM_SELECT_EXACT) {
    static thread_local cpu::SelectScratch scratch;
    // The non-finite scan rides along the histogram pass.
    largest = cpu::selectExact(state.memory.data(), args.grad, args.count,
                               args.k, state.indices.data(), scratch);
  } else if (scanForNonFinite()) {
    largest =
        cpu::maxMagnitudeKeySum(state.memory.data(), args.grad, args.count);
  }
  // m + g, not g: a finite gradient that overflows the memory counts.
  const bool nonFinite =
      scanForNonFinite() &&
      cpu::exceedsLimit(largest, inputLimit(/*summed=*/true));
  std::vector<CheckField> fields = compressFields(args, state);
  fields.insert(fields.end(), extra.begin(), extra.end());
  // Chunk selection sends each index's offset inside its chunk.
  const int width = indexWidth(args);
  const int64_t chunk =
      args.selection == GRADCOMM_SELECT_CHUNK ? args.chunkSize : 0;
  if (foldsIndices(args)) {
    // The indices go out with the agreement, so the leader selects first
    // (a chunk leader then updates in the fused gather's pass, like the
    // other ranks: the same bits as the one-pass kernel).
    if (isLeader && args.selection == GRADCOMM_SELECT_CHUNK)
      cpu::selectChunk(state.memory.data(), args.grad, args.count,
                       args.chunkSize, state.indices.data());
    std::array<uint8_t, kAgreementPayloadBytes> sent{}, received{};
    if (isLeader)
      encodeIndices(state.indices.data(), args.k, width, chunk, sent.data());
    const AgreementPayload payload{leader, sent.data(),
                                   static_cast<size_t>(args.k * width),
                                   received.data()};
    gradcomm_status agreed =
        checkConsistency(call, fields, nonFinite, GRADCOMM_OK, &payload);
    if ((*skipped = skippedNonFinite(agreed, args.state)))
      return GRADCOMM_OK;
    GRADCOMM_RETURN_IF_ERROR(agreed);
    decodeIndices(received.data(), args.k, width, chunk, state.indices.data());
    return GRADCOMM_OK;
  }
  // Nothing is written before every rank agrees and all gradients are
  // finite.
  gradcomm_status agreed = checkConsistency(call, fields, nonFinite);
  if ((*skipped = skippedNonFinite(agreed, args.state)))
    return GRADCOMM_OK;
  GRADCOMM_RETURN_IF_ERROR(agreed);
  if (isLeader && args.selection == GRADCOMM_SELECT_CHUNK) {
    if (updated) {
      cpu::selectChunkAndUpdate(state.memory.data(), args.grad, args.count,
                                args.chunkSize, beta, state.indices.data(),
                                state.values.data(), out);
      *updated = true;
    } else {
      cpu::selectChunk(state.memory.data(), args.grad, args.count,
                       args.chunkSize, state.indices.data());
    }
  }
  return broadcastIndices(call, state.indices.data(), args.k, leader, width,
                          chunk);
}

/// The index broadcast's bytes on the CPU backend: offsets inside their
/// chunks (1 or 2 bytes) for chunk selection, int32 indices for tensors
/// below 2^31 elements (the CUDA backend sends int64). Indices folded into
/// the agreement count as the same bytes, in no message of their own.
void countCompress(gradcomm_op_stats &stats, const CompressArgs &args) {
  const Context &ctx = context();
  const int width = usingCuda() ? 8 : indexWidth(args);
  uint64_t bytes = broadcastBytes(width * args.k, ctx.size);
  if (!foldsIndices(args))
    stats.messages += 1;
  stats.index_bytes_sent += bytes;
  stats.index_bytes_received += bytes;
}

void countValueReduce(gradcomm_op_stats &stats, int64_t k) {
  const Context &ctx = context();
  uint64_t bytes = allReduceBytes(sizeof(float) * k, ctx.size);
  stats.messages += 1;
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
}

/// Turns summed values into the mean for GRADCOMM_REDUCE_AVERAGE.
void averageValues(float *values, int64_t k, gradcomm_reduction reduction) {
  if (reduction == GRADCOMM_REDUCE_AVERAGE)
    divideByGroupSize(values, k);
}

/// Reduces `values` in place across ranks (sum, or mean).
gradcomm_status reduceValues(const Call &call, float *values, int64_t k,
                             gradcomm_reduction reduction) {
  GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, values, k));
  averageValues(values, k, reduction);
  return GRADCOMM_OK;
}

/// Checks k indices (on the host, or staged from the device on CUDA) lie
/// in [0, count) and, with `ascending`, increase strictly, as the memory
/// update's single merge pass needs.
gradcomm_status validateIndices(const Call &call, const int64_t *indices,
                                int64_t k, int64_t count, bool ascending) {
  std::vector<int64_t> staged;
  const int64_t *host = indices;
  if (usingCuda()) {
    staged.resize(k);
    char error[kErrorSize] = {0};
    GRADCOMM_RETURN_IF_ERROR(
        cudaStatus(call,
                   context().cuda->bytesToHost(staged.data(), indices,
                                               sizeof(int64_t) * k, error),
                   error));
    host = staged.data();
  }
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
  if (!usingCuda()) {
    std::iota(indices, indices + k, int64_t(0));
    std::fill(values, values + k, 0.0f);
    return GRADCOMM_OK;
  }
  std::vector<int64_t> first(k);
  std::iota(first.begin(), first.end(), int64_t(0));
  char error[kErrorSize] = {0};
  GRADCOMM_RETURN_IF_ERROR(
      cudaStatus(call,
                 context().cuda->bytesFromHost(indices, first.data(),
                                               sizeof(int64_t) * k, error),
                 error));
  return zeroBuffer(call, values, k);
}

bool overlaps(const float *a, const float *b, int64_t count) {
  return a < b + count && b < a + count;
}

} // namespace

namespace {

/// The fused step's arguments, as the blocking and started forms take them.
struct ScalecomCall {
  CompressArgs args;
  float *out;
  float beta;
  gradcomm_reduction reduction;
};

/// The blocking and started forms' common part: arguments and state, then
/// (CPU) agreement, selection, index broadcast and the fused gather +
/// memory update, which leaves this rank's k values in `state->values` and
/// zeros in `out`; the state's step moves on. On the CUDA backend, only
/// the arguments and state (cudaScalecom does the rest). `*skipped`: the
/// non-finite policy zeroed `out` and changed nothing else.
gradcomm_status beginScalecom(const Call &call, const ScalecomCall &c,
                              State *&state, bool *skipped) {
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
  if (usingCuda())
    return GRADCOMM_OK;
  bool updated = false;
  GRADCOMM_RETURN_IF_ERROR(selectAndBroadcast(
      call, args, *state,
      {{"beta", floatBits(c.beta)}, {"reduction", c.reduction}}, skipped,
      c.beta, c.out, &updated));
  if (*skipped)
    return zeroBuffer(call, c.out, args.count);
  if (!updated)
    cpu::gatherAndUpdate(state->memory.data(), args.grad, args.count,
                         state->indices.data(), args.k, c.beta,
                         state->values.data(), c.out);
  state->step += 1;
  return GRADCOMM_OK;
}

/// After the value all-reduce: the mean, the scatter into `out` (zeroed by
/// beginScalecom) and the counters.
void finishScalecom(const ScalecomCall &c, State &state, double start) {
  const CompressArgs &args = c.args;
  averageValues(state.values.data(), args.k, c.reduction);
  cpu::scatter(c.out, state.indices.data(), state.values.data(), args.k);
  gradcomm_op_stats &stats = opStats(args.state);
  stats.calls += 1;
  countCompress(stats, args);
  countValueReduce(stats, args.k);
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
    bool skipped = false;
    GRADCOMM_RETURN_IF_ERROR(beginScalecom(call, c, state, &skipped));
    if (usingCuda()) {
      GRADCOMM_RETURN_IF_ERROR(
          cudaScalecom(call, c.args, *state, beta, reduction, out, &skipped));
      if (skipped)
        return GRADCOMM_OK;
      gradcomm_op_stats &stats = opStats(stateName);
      stats.calls += 1;
      countCompress(stats, c.args);
      countValueReduce(stats, k);
      stats.seconds += now() - start;
      return GRADCOMM_OK;
    }
    if (skipped)
      return GRADCOMM_OK;
    GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, state->values.data(), k));
    finishScalecom(c, *state, start);
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_scalecom_start_f32(
    const char *stateName, const float *grad, float *out, int64_t count,
    int64_t k, gradcomm_selection selection, int64_t chunkSize, float beta,
    gradcomm_reduction reduction, gradcomm_request *request) {
  return guarded("scalecom_start_f32", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(
        requireStartable(call, request, "gradcomm_scalecom_f32"));
    const ScalecomCall c{{stateName, grad, count, k, selection, chunkSize},
                         out,
                         beta,
                         reduction};
    const double start = now();
    State *state = nullptr;
    bool skipped = false;
    GRADCOMM_RETURN_IF_ERROR(beginScalecom(call, c, state, &skipped));
    auto started = std::make_unique<gradcomm_request_s>();
    started->opName = stateName;
    started->skipped = skipped;
    if (!skipped) {
      GRADCOMM_RETURN_IF_ERROR(
          startAllReduceSum(call, state->values.data(), k, started->requests));
      // The names the counters and messages use outlive the caller's
      // string: keep a copy.
      started->finish = [copy = c, name = started->opName, state,
                         start]() mutable {
        copy.args.state = name.c_str();
        finishScalecom(copy, *state, start);
      };
      state->inFlight = true;
      started->release = [state] { state->inFlight = false; };
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
    bool skipped = false;
    if (usingCuda()) {
      const Context &ctx = context();
      char error[kErrorSize] = {0};
      gradcomm_status agreed = checkConsistencyOfInput(
          call, grad, count, inputLimit(true), compressFields(args, *state));
      if ((skipped = skippedNonFinite(agreed, stateName)))
        return skipCompress(call, *state, k, values, indices);
      GRADCOMM_RETURN_IF_ERROR(agreed);
      GRADCOMM_RETURN_IF_ERROR(cudaStatus(
          call,
          ctx.cuda->compress(state->device, grad, count, k, selection,
                             selection == GRADCOMM_SELECT_CHUNK ? chunkSize : 0,
                             static_cast<int>(state->step % ctx.size), values,
                             indices, error),
          error));
    } else {
      GRADCOMM_RETURN_IF_ERROR(
          selectAndBroadcast(call, args, *state, {}, &skipped));
      if (skipped)
        return skipCompress(call, *state, k, values, indices);
      std::copy(state->indices.begin(), state->indices.end(), indices);
      cpu::gather(state->memory.data(), grad, indices, k, values);
    }
    gradcomm_op_stats &stats = opStats(stateName);
    stats.calls += 1;
    countCompress(stats, args);
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

/// The reduced values into an all-zero `out` at `indices`, and the counters.
void scatterReduced(const char *opName, const float *reduced,
                    const int64_t *indices, int64_t k, float *out,
                    int64_t count, double start) {
  std::fill(out, out + count, 0.0f);
  cpu::scatter(out, indices, reduced, k);
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
    if (usingCuda()) {
      char error[kErrorSize] = {0};
      GRADCOMM_RETURN_IF_ERROR(cudaStatus(
          call,
          context().cuda->sparseAllReduce(values, indices, k, out, count,
                                          reduction == GRADCOMM_REDUCE_AVERAGE,
                                          error),
          error));
      gradcomm_op_stats &stats = opStats(opName);
      stats.calls += 1;
      countValueReduce(stats, k);
      stats.seconds += now() - start;
      return GRADCOMM_OK;
    }
    static thread_local std::vector<float> reduced;
    reduced.assign(values, values + k);
    GRADCOMM_RETURN_IF_ERROR(reduceValues(call, reduced.data(), k, reduction));
    scatterReduced(opName, reduced.data(), indices, k, out, count, start);
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_sparse_all_reduce_start_f32(
    const char *opName, const float *values, const int64_t *indices, int64_t k,
    float *out, int64_t count, gradcomm_reduction reduction,
    gradcomm_request *request) {
  return guarded("sparse_all_reduce_start_f32", opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(
        requireStartable(call, request, "gradcomm_sparse_all_reduce_f32"));
    GRADCOMM_RETURN_IF_ERROR(
        beginSparseAllReduce(call, values, indices, k, out, count, reduction));
    const double start = now();
    // Values and indices are copied into the request: the caller's
    // buffers are free at once, and several calls may be in flight.
    auto reduced = std::make_shared<std::vector<float>>(values, values + k);
    auto kept = std::make_shared<std::vector<int64_t>>(indices, indices + k);
    auto started = std::make_unique<gradcomm_request_s>();
    started->opName = opName ? opName : "";
    started->what = "MPI_Iallreduce (started sparse all-reduce)";
    GRADCOMM_RETURN_IF_ERROR(
        startAllReduceSum(call, reduced->data(), k, started->requests));
    started->finish = [name = started->opName, reduced, kept, k, out, count,
                       reduction, start] {
      averageValues(reduced->data(), k, reduction);
      scatterReduced(name.c_str(), reduced->data(), kept->data(), k, out, count,
                     start);
    };
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
    if (usingCuda()) {
      char error[kErrorSize] = {0};
      GRADCOMM_RETURN_IF_ERROR(
          cudaStatus(call,
                     context().cuda->memoryUpdate(state->device, grad, count,
                                                  indices, k, beta, error),
                     error));
    } else {
      cpu::gatherAndUpdate(state->memory.data(), grad, count, indices, k, beta,
                           nullptr, nullptr);
    }
    state->step += 1;
    return GRADCOMM_OK;
  });
}
