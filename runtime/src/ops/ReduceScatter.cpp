//===- ReduceScatter.cpp - Dense and compressed reduce-scatter ------------===//
//
// Part of the GradComm project.
//
// Sharded data parallelism reduce-scatters gradients: each rank keeps the
// sum of its shard only. The compressed form is ScaleCom's step with the
// value all-reduce replaced by a reduce-scatter: the leader's indices are
// the same on every rank and ascending, so the selected values of shard r
// are one contiguous run of the k values, and a reduce-scatter with
// per-rank counts delivers each rank the sums of its run. Host tensors go
// through the transport; a device backend (CUDA) runs both steps itself
// (Backend::deviceReduceScatter, deviceScalecomReduceScatter), blocking.
//
//===----------------------------------------------------------------------===//

#include "CompressSteps.h"
#include "Shards.h"
#include "Wire.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

using namespace gradcomm;

namespace {

/// Elements of each shard.
std::vector<int64_t> shardCounts(const std::vector<int64_t> &bounds) {
  std::vector<int64_t> counts(bounds.size() - 1);
  for (size_t r = 0; r + 1 < bounds.size(); ++r)
    counts[r] = bounds[r + 1] - bounds[r];
  return counts;
}

/// Every shard within one transport call (each rank receives its shard in
/// one message).
gradcomm_status requireShardsFit(const Call &call, int64_t count) {
  const int64_t longest = count / context().size + 1;
  if (longest > kTransportMaxCount)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "a shard of " + std::to_string(count) + " elements over " +
                         std::to_string(context().size) +
                         " ranks exceeds one transfer (" +
                         std::to_string(kTransportMaxCount) + " elements)");
  return GRADCOMM_OK;
}

/// This rank's shard length for `count` elements in the active group.
int64_t ownShardLength(int64_t count) {
  const int rank = context().rank, size = context().size;
  return shardBegin(count, rank + 1, size) - shardBegin(count, rank, size);
}

/// `shard` is this rank's output: not null unless its shard is empty (more
/// ranks than elements), and apart from the `count` elements of `input`.
gradcomm_status requireShard(const Call &call, const float *input,
                             const char *inputName, int64_t count,
                             const float *shard) {
  const int64_t length = ownShardLength(count);
  if (length == 0)
    return GRADCOMM_OK;
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "shard", shard));
  if (input < shard + length && shard < input + count)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("'") + inputName + "' and 'shard' overlap");
  return GRADCOMM_OK;
}

/// The dense forms' common part: arguments, the agreement (with the
/// non-finite scan of `data`, within what the wire's sum can carry).
/// `*skipped`: the policy zeroed `shard`.
gradcomm_status beginReduceScatter(const Call &call, const char *opName,
                                   const float *data, float *shard,
                                   int64_t count, gradcomm_wire wire,
                                   gradcomm_reduction reduction,
                                   bool *skipped) {
  *skipped = false;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "op_name", opName));
    GRADCOMM_RETURN_IF_ERROR(
        requireRange(call, "count", count, 1, int64_t(1) << 62));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "data", data));
    GRADCOMM_RETURN_IF_ERROR(requireReduction(call, reduction));
    GRADCOMM_RETURN_IF_ERROR(requireWireOnHostOrDevice(call, wire));
    GRADCOMM_RETURN_IF_ERROR(requireShardsFit(call, count));
    return requireShard(call, data, "data", count, shard);
  }));
  gradcomm_status agreed = checkConsistencyOfInput(
      call, data, count, wireInputLimit(wire, /*summed=*/true),
      {{"count", count}, {"reduction", reduction}, {"wire", wire}});
  if (skippedNonFinite(agreed, opName)) {
    *skipped = true;
    return zeroBuffer(call, shard, ownShardLength(count));
  }
  return agreed;
}

void countReduceScatter(const char *opName, uint64_t valueBytes, double start) {
  gradcomm_op_stats &stats = opStats(opName);
  const uint64_t bytes = reduceScatterBytes(valueBytes, context().size);
  stats.calls += 1;
  stats.messages += 1;
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
  stats.seconds += now() - start;
}

/// The compressed forms' arguments.
struct CompressedCall {
  CompressArgs args;
  float *shard;
  float beta;
  gradcomm_reduction reduction;
  /// The recipe's options as agreement fields (the recipe form), or none.
  std::vector<CheckField> recipe = {};
};

/// One compressed step's selection, as the values' reduce-scatter needs it.
struct Selected {
  /// This rank's values at the leader's indices, ascending: shard r's are
  /// the next counts[r] values after those of shards 0..r-1; this rank's
  /// start at `first`.
  std::vector<float> send;
  std::vector<int64_t> indices;
  std::vector<int64_t> counts;
  int64_t first = 0;
  /// This rank's shard of the gradient.
  int64_t shardBegin = 0;
  int64_t shardLength = 0;
  /// For the counters.
  std::optional<CompressStep> step;
  bool folds = false;
  /// A device backend ran the whole step (shard written).
  bool onDevice = false;
};

/// One compressed step up to the values' reduce-scatter: arguments, state,
/// preparation and agreement, the leader's indices to every rank, this
/// rank's values at them, the memory update. `*skipped`: the non-finite
/// policy zeroed `shard`, nothing else changed.
gradcomm_status beginCompressed(const Call &call, const CompressedCall &c,
                                Selected &selected, bool *skipped) {
  const CompressArgs &args = c.args;
  State *state = nullptr;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(validateCompress(call, args));
    GRADCOMM_RETURN_IF_ERROR(validateBeta(call, c.beta));
    GRADCOMM_RETURN_IF_ERROR(requireReduction(call, c.reduction));
    GRADCOMM_RETURN_IF_ERROR(requireWireOnHostOrDevice(call, args.wire));
    if (args.segments > 0)
      GRADCOMM_RETURN_IF_ERROR(
          requireHostTensors(call, "a selection per segment"));
    GRADCOMM_RETURN_IF_ERROR(requireShardsFit(call, args.count));
    GRADCOMM_RETURN_IF_ERROR(
        requireShard(call, args.grad, "grad", args.count, c.shard));
    return lookupIdleState(call, args.state, args.count, state);
  }));
  const std::vector<int64_t> bounds = shardBounds(args.count, context().size);
  const int rank = context().rank;
  selected.shardBegin = bounds[rank];
  selected.shardLength = bounds[rank + 1] - bounds[rank];
  Prepared prepared;
  // The recipe's hash covers beta (and the slots are few: the segments
  // form with the recipe fills all of them).
  std::vector<CheckField> fields = {{"reduction", c.reduction}};
  if (c.recipe.empty())
    fields.push_back({"beta", floatBits(c.beta)});
  fields.insert(fields.end(), c.recipe.begin(), c.recipe.end());
  GRADCOMM_RETURN_IF_ERROR(prepareAndAgree(call, args, stepOf(args, *state),
                                           fields, prepared, skipped));
  if (*skipped)
    return zeroBuffer(call, c.shard, selected.shardLength);
  selected.step.emplace(stepOf(args, *state));
  selected.folds = prepared.foldsIndices();
  if (!backend().tensorsOnHost()) {
    GRADCOMM_RETURN_IF_ERROR(backend().deviceScalecomReduceScatter(
        call, *selected.step, prepared, c.beta,
        c.reduction == GRADCOMM_REDUCE_AVERAGE, c.shard));
    selected.onDevice = true;
    state->step += 1;
    return GRADCOMM_OK;
  }
  selected.send.resize(args.k);
  selected.indices.resize(args.k);
  GRADCOMM_RETURN_IF_ERROR(backend().compressAndUpdate(
      call, *selected.step, prepared, c.beta, selected.send.data(),
      selected.indices.data()));
  state->step += 1;
  // Indices ascend: shard r's are the run between its bounds.
  const auto &indices = selected.indices;
  selected.counts.assign(context().size, 0);
  for (int r = 0; r < context().size; ++r) {
    const int64_t begin =
        std::lower_bound(indices.begin(), indices.end(), bounds[r]) -
        indices.begin();
    const int64_t end =
        std::lower_bound(indices.begin(), indices.end(), bounds[r + 1]) -
        indices.begin();
    selected.counts[r] = end - begin;
    if (r == rank)
      selected.first = begin;
  }
  return GRADCOMM_OK;
}

/// Zeros, then the received sums (means) at this rank's selected indices.
void scatterIntoShard(const Selected &selected, const float *received,
                      float *shard, bool average) {
  std::fill(shard, shard + selected.shardLength, 0.0f);
  const int64_t *indices = selected.indices.data() + selected.first;
  const int64_t n = selected.counts[context().rank];
  for (int64_t j = 0; j < n; ++j)
    shard[indices[j] - selected.shardBegin] = received[j];
  if (average)
    divideByGroupSize(shard, selected.shardLength);
}

void countCompressed(const char *stateName, const CompressStep &step,
                     bool folds, double start) {
  gradcomm_op_stats &stats = opStats(stateName);
  const uint64_t bytes =
      reduceScatterBytes(wireValueBytes(step.wire) * step.k, context().size);
  stats.calls += 1;
  countCompress(stats, step, folds);
  stats.messages += 1;
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
  stats.seconds += now() - start;
}

/// The dense reduce-scatter's transfer, agreed on, into `started`, the
/// values travelling as `wire`; counted under `opName` when it completes.
gradcomm_status transferDense(const Call &call, const char *opName,
                              const float *data, float *shard, int64_t count,
                              gradcomm_wire wire, gradcomm_reduction reduction,
                              double start, gradcomm_request_s &started) {
  started.opName = opName;
  started.what = "reduce-scatter";
  if (!backend().tensorsOnHost()) {
    // The device backend's own collective, complete when it returns.
    GRADCOMM_RETURN_IF_ERROR(backend().deviceReduceScatter(
        call, data, shard, count, reduction == GRADCOMM_REDUCE_AVERAGE, wire));
    started.finish = [name = started.opName, count, start, wire] {
      countReduceScatter(name.c_str(), wireValueBytes(wire) * count, start);
    };
    return GRADCOMM_OK;
  }
  const std::vector<int64_t> counts =
      shardCounts(shardBounds(count, context().size));
  std::function<void()> widen;
  GRADCOMM_RETURN_IF_ERROR(
      startReduceScatterWire(call, data, shard, counts, wire, started, &widen));
  started.finish = [name = started.opName, widen, shard,
                    length = counts[context().rank], count, wire,
                    average = reduction == GRADCOMM_REDUCE_AVERAGE, start] {
    if (widen)
      widen();
    if (average)
      divideByGroupSize(shard, length);
    countReduceScatter(name.c_str(), wireValueBytes(wire) * count, start);
  };
  return GRADCOMM_OK;
}

/// The dense reduce-scatter up to its transfer, into `started` (the
/// blocking form completes it at once).
gradcomm_status startDense(const Call &call, const char *opName,
                           const float *data, float *shard, int64_t count,
                           gradcomm_wire wire, gradcomm_reduction reduction,
                           gradcomm_request_s &started) {
  const double start = now();
  GRADCOMM_RETURN_IF_ERROR(beginReduceScatter(
      call, opName, data, shard, count, wire, reduction, &started.skipped));
  started.opName = opName;
  if (started.skipped)
    return GRADCOMM_OK;
  return transferDense(call, opName, data, shard, count, wire, reduction, start,
                       started);
}

/// The compressed step up to the values' reduce-scatter, into `started`:
/// it keeps the values, the indices and the receive buffer until its
/// wait, so several calls may be in flight.
gradcomm_status startCompressed(const Call &call, const CompressedCall &c,
                                gradcomm_request_s &started) {
  const double start = now();
  auto selected = std::make_shared<Selected>();
  GRADCOMM_RETURN_IF_ERROR(
      beginCompressed(call, c, *selected, &started.skipped));
  started.opName = c.args.state;
  started.what = "reduce-scatter (selected values)";
  if (started.skipped)
    return GRADCOMM_OK;
  if (selected->onDevice) {
    started.finish = [name = started.opName, selected, start] {
      countCompressed(name.c_str(), *selected->step, selected->folds, start);
    };
    return GRADCOMM_OK;
  }
  auto received =
      std::make_shared<std::vector<float>>(selected->counts[context().rank]);
  std::function<void()> widen;
  GRADCOMM_RETURN_IF_ERROR(
      startReduceScatterWire(call, selected->send.data(), received->data(),
                             selected->counts, c.args.wire, started, &widen));
  started.finish = [name = started.opName, selected, received, widen,
                    shard = c.shard,
                    average = c.reduction == GRADCOMM_REDUCE_AVERAGE, start] {
    if (widen)
      widen();
    scatterIntoShard(*selected, received->data(), shard, average);
    countCompressed(name.c_str(), *selected->step, selected->folds, start);
  };
  return GRADCOMM_OK;
}

/// A blocking form: the started call completed at once.
gradcomm_status complete(const Call &call, gradcomm_request_s &started) {
  for (Transfer &transfer : started.transfers)
    GRADCOMM_RETURN_IF_ERROR(waitYielding(call, transfer, started.what));
  if (!started.skipped && started.finish)
    started.finish();
  return GRADCOMM_OK;
}

/// The selection per segment of the segments form (none: `count` 0).
struct Segments {
  const int64_t *ends = nullptr;
  const int64_t *k = nullptr;
  int64_t count = 0;
};

/// The compressed step's commit: the velocity becomes u', zeroed at the
/// sent indices (unless `keep_velocity`), except in a segment sent whole:
/// that is a layer kept dense, whose velocity stays u'
/// (gradcomm_scalecom_recipe_f32's `dense`), or momentum would be lost
/// there.
void commitCompressedVelocity(const gradcomm_scalecom_options &o,
                              const State &state, State *velocity,
                              const Segments &segments) {
  const bool masked = masksVelocity(o, /*compressed=*/true);
  if (!velocity || segments.count == 0 || !masked) {
    commitVelocity(state, velocity, masked);
    return;
  }
  commitVelocity(state, velocity, /*masked=*/false);
  float *u = velocity->data();
  const int64_t *ends = segments.ends;
  for (int64_t index : state.indices) {
    const int64_t s =
        std::upper_bound(ends, ends + segments.count, index) - ends;
    const bool whole = s < segments.count &&
                       segments.k[s] == ends[s] - (s == 0 ? 0 : ends[s - 1]);
    if (!whole)
      u[index] = 0.0f;
  }
}

/// The recipe form (blocking): the recipe's dense steps (a dense layer,
/// the dense warm-up) reduce-scatter what the step communicates (the
/// gradient, clipped, through the velocity with momentum correction) and
/// leave the memory alone; its compressed steps are the compressed
/// reduce-scatter of it, selected per segment when `segments` has some,
/// after which the velocity is masked at the sent indices, as
/// gradcomm_scalecom_recipe_f32 does.
gradcomm_status scalecomReduceScatterRecipe(
    const Call &call, const char *stateName, const float *grad, float *shard,
    int64_t count, const gradcomm_scalecom_options *o, const Segments &segments,
    gradcomm_reduction reduction) {
  const double start = now();
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  State *state = nullptr;
  State *velocity = nullptr;
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(validateRecipe(call, o));
    if (o->warmup == GRADCOMM_WARMUP_RAMP)
      return call.fail(GRADCOMM_ERR_UNSUPPORTED,
                       "the compressed reduce-scatter takes the recipe's "
                       "dense warm-up, dense layers, beta, momentum "
                       "correction, clipping and wire; a ramp warm-up is "
                       "not built for it");
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
    GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, o->k));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "grad", grad));
    GRADCOMM_RETURN_IF_ERROR(requireReduction(call, reduction));
    if (segments.count > 0) {
      // Checked on dense steps too, so a bad layout fails at once.
      GRADCOMM_RETURN_IF_ERROR(validateCompress(
          call, {stateName, grad, count, o->k, o->selection, o->chunk_size,
                 o->wire, segments.ends, segments.k, segments.count}));
      GRADCOMM_RETURN_IF_ERROR(
          requireHostTensors(call, "a selection per segment"));
    }
    if (o->clip > 0.0f || o->momentum > 0.0f)
      GRADCOMM_RETURN_IF_ERROR(requireHostTensors(
          call, "the compressed reduce-scatter with clipping or momentum "
                "correction"));
    GRADCOMM_RETURN_IF_ERROR(requireShardsFit(call, count));
    GRADCOMM_RETURN_IF_ERROR(requireShard(call, grad, "grad", count, shard));
    if (o->momentum > 0.0f) {
      GRADCOMM_RETURN_IF_ERROR(lookupIdleState(
          call, velocityName(stateName).c_str(), count, velocity));
      GRADCOMM_RETURN_IF_ERROR(reserveNextVelocity(call, backend(), *velocity));
    }
    return lookupIdleState(call, stateName, count, state);
  }));
  const float *input = recipeInput(*o, grad, count, *state, velocity);
  gradcomm_request_s started;
  if (!denseStep(*o, state->step)) {
    GRADCOMM_RETURN_IF_ERROR(startCompressed(
        call,
        {{stateName, input, count, o->k, o->selection, o->chunk_size, o->wire,
          segments.ends, segments.k, segments.count},
         shard,
         o->beta,
         reduction,
         recipeFields(*o)},
        started));
    GRADCOMM_RETURN_IF_ERROR(complete(call, started));
    // The CPU backend leaves the leader's indices in state.indices.
    if (!started.skipped)
      commitCompressedVelocity(*o, *state, velocity, segments);
    return GRADCOMM_OK;
  }
  std::vector<CheckField> fields = recipeFields(*o);
  fields.push_back({"step", static_cast<int64_t>(state->step)});
  fields.push_back({"count", count});
  fields.push_back({"reduction", reduction});
  gradcomm_status agreed = checkConsistencyOfInput(
      call, input, count, wireInputLimit(o->wire, /*summed=*/true), fields);
  if (skippedNonFinite(agreed, stateName))
    return zeroBuffer(call, shard, ownShardLength(count));
  GRADCOMM_RETURN_IF_ERROR(agreed);
  GRADCOMM_RETURN_IF_ERROR(transferDense(call, stateName, input, shard, count,
                                         o->wire, reduction, start, started));
  GRADCOMM_RETURN_IF_ERROR(complete(call, started));
  commitVelocity(*state, velocity, /*masked=*/false);
  state->step += 1;
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_shard_range(int64_t count, int rank, int size,
                                     int64_t *begin, int64_t *length) {
  return guarded("shard_range", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "begin", begin));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "length", length));
    GRADCOMM_RETURN_IF_ERROR(
        requireRange(call, "count", count, 0, int64_t(1) << 62));
    GRADCOMM_RETURN_IF_ERROR(requireRange(call, "size", size, 1, INT32_MAX));
    GRADCOMM_RETURN_IF_ERROR(requireRange(call, "rank", rank, 0, size - 1));
    *begin = shardBegin(count, rank, size);
    *length = shardBegin(count, rank + 1, size) - *begin;
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_reduce_scatter_f32(const char *opName,
                                            const float *data, float *shard,
                                            int64_t count,
                                            gradcomm_reduction reduction) {
  return guarded("reduce_scatter_f32", opName, [&](const Call &call) {
    gradcomm_request_s started;
    GRADCOMM_RETURN_IF_ERROR(startDense(call, opName, data, shard, count,
                                        GRADCOMM_WIRE_F32, reduction, started));
    return complete(call, started);
  });
}

gradcomm_status gradcomm_reduce_scatter_wire_f32(const char *opName,
                                                 const float *data,
                                                 float *shard, int64_t count,
                                                 gradcomm_wire wire,
                                                 gradcomm_reduction reduction) {
  return guarded("reduce_scatter_wire_f32", opName, [&](const Call &call) {
    gradcomm_request_s started;
    GRADCOMM_RETURN_IF_ERROR(
        startDense(call, opName, data, shard, count, wire, reduction, started));
    return complete(call, started);
  });
}

gradcomm_status gradcomm_reduce_scatter_start_f32(const char *opName,
                                                  const float *data,
                                                  float *shard, int64_t count,
                                                  gradcomm_reduction reduction,
                                                  gradcomm_request *request) {
  return guarded("reduce_scatter_start_f32", opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(requireStartable(call, request,
                                              StartedForm::ReduceScatter,
                                              "gradcomm_reduce_scatter_f32"));
    auto started = std::make_unique<gradcomm_request_s>();
    GRADCOMM_RETURN_IF_ERROR(startDense(call, opName, data, shard, count,
                                        GRADCOMM_WIRE_F32, reduction,
                                        *started));
    *request = trackRequest(std::move(started));
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_reduce_scatter_wire_start_f32(
    const char *opName, const float *data, float *shard, int64_t count,
    gradcomm_wire wire, gradcomm_reduction reduction,
    gradcomm_request *request) {
  return guarded(
      "reduce_scatter_wire_start_f32", opName, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(
            requireStartable(call, request, StartedForm::ReduceScatter,
                             "gradcomm_reduce_scatter_wire_f32"));
        auto started = std::make_unique<gradcomm_request_s>();
        GRADCOMM_RETURN_IF_ERROR(startDense(call, opName, data, shard, count,
                                            wire, reduction, *started));
        *request = trackRequest(std::move(started));
        return GRADCOMM_OK;
      });
}

gradcomm_status gradcomm_scalecom_reduce_scatter_f32(
    const char *stateName, const float *grad, float *shard, int64_t count,
    int64_t k, gradcomm_selection selection, int64_t chunkSize, float beta,
    gradcomm_reduction reduction) {
  return guarded(
      "scalecom_reduce_scatter_f32", stateName, [&](const Call &call) {
        gradcomm_request_s started;
        GRADCOMM_RETURN_IF_ERROR(
            startCompressed(call,
                            {{stateName, grad, count, k, selection, chunkSize},
                             shard,
                             beta,
                             reduction},
                            started));
        return complete(call, started);
      });
}

gradcomm_status gradcomm_scalecom_reduce_scatter_start_f32(
    const char *stateName, const float *grad, float *shard, int64_t count,
    int64_t k, gradcomm_selection selection, int64_t chunkSize, float beta,
    gradcomm_reduction reduction, gradcomm_request *request) {
  return guarded(
      "scalecom_reduce_scatter_start_f32", stateName, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(
            requireStartable(call, request, StartedForm::ReduceScatter,
                             "gradcomm_scalecom_reduce_scatter_f32"));
        auto started = std::make_unique<gradcomm_request_s>();
        GRADCOMM_RETURN_IF_ERROR(
            startCompressed(call,
                            {{stateName, grad, count, k, selection, chunkSize},
                             shard,
                             beta,
                             reduction},
                            *started));
        *request = trackRequest(std::move(started));
        return GRADCOMM_OK;
      });
}

gradcomm_status gradcomm_scalecom_reduce_scatter_segments_f32(
    const char *stateName, const float *grad, float *shard, int64_t count,
    const int64_t *segmentEnds, const int64_t *segmentK, int64_t segments,
    const gradcomm_scalecom_options *options, gradcomm_reduction reduction) {
  return guarded(
      "scalecom_reduce_scatter_segments_f32", stateName, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
        GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
          return requireRange(call, "segments", segments, 1, int64_t(1) << 40);
        }));
        return scalecomReduceScatterRecipe(
            call, stateName, grad, shard, count, options,
            {segmentEnds, segmentK, segments}, reduction);
      });
}

gradcomm_status gradcomm_scalecom_reduce_scatter_recipe_f32(
    const char *stateName, const float *grad, float *shard, int64_t count,
    const gradcomm_scalecom_options *options, gradcomm_reduction reduction) {
  return guarded(
      "scalecom_reduce_scatter_recipe_f32", stateName, [&](const Call &call) {
        return scalecomReduceScatterRecipe(call, stateName, grad, shard, count,
                                           options, {}, reduction);
      });
}
