//===- Learners.cpp - n data-parallel learners in one process -------------===//
//
// Part of the GradComm project.
//
// gradcomm/runtime_learners.h; docs/learners.md. The multi-rank ops'
// steps, one learner after the other: where a rank would call the
// transport, the learners' rows are combined here in the order MPICH
// combines them (sumInTransportOrder). Everything else is the runtime's
// own code: the recipe's parts (CompressSteps.h), the CPU kernels, the
// byte counts of the cost model.
//
//===----------------------------------------------------------------------===//

#include "CompressSteps.h"
#include "CpuBackend.h"
#include "Kernels.h"
#include "Wire.h"
#include "gradcomm/runtime_learners.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace gradcomm;

namespace {

/// One named tensor's state on every learner.
struct LearnerStates {
  int64_t count = 0;
  std::vector<std::unique_ptr<State>> states;
};

} // namespace

struct gradcomm_learners_s {
  int32_t size = 0;
  std::map<std::string, LearnerStates> states;
  std::map<std::string, gradcomm_op_stats> stats;
  cpu::SelectScratch scratch;
  /// Per learner: the k values it contributes (rows of k).
  std::vector<float> rows;
};

namespace {

constexpr int32_t kMaxLearners = 1024;

/// The world the learners' calls report (Call's `world`).
constexpr const char *kWorld = "simulated learners";

gradcomm_status requireGroup(const Call &call, gradcomm_learners group) {
  return requirePointer(call, "group", group);
}

/// Learner r's state `name` of `count` floats (zeroed when new).
gradcomm_status lookupLearnerStates(const Call &call, gradcomm_learners group,
                                    const std::string &name, int64_t count,
                                    LearnerStates *&found) {
  auto [it, added] = group->states.try_emplace(name);
  LearnerStates &states = it->second;
  if (!added) {
    if (states.count != count)
      return call.fail(GRADCOMM_ERR_STATE, "state '" + name + "' holds " +
                                               std::to_string(states.count) +
                                               " elements, this call passes " +
                                               std::to_string(count));
    found = &states;
    return GRADCOMM_OK;
  }
  const Backend &host = *extensions().hostBackend;
  for (int32_t r = 0; r < group->size; ++r) {
    auto state = std::make_unique<State>();
    float *memory = nullptr;
    gradcomm_status allocated = host.allocate(call, count, &memory);
    if (allocated != GRADCOMM_OK) {
      group->states.erase(it);
      return allocated;
    }
    state->count = count;
    state->memory = BackendMemory(&host, memory);
    states.states.push_back(std::move(state));
  }
  states.count = count;
  found = &states;
  return GRADCOMM_OK;
}

/// rows[0..k) = the sum over the learners' rows (`size` rows of `k`), in
/// the order MPICH's all-reduce adds them for a power-of-two group: a
/// pairwise tree in rank order, ((r0 + r1) + (r2 + r3)) + ... (recursive
/// doubling for short vectors, recursive halving for long ones pair ranks
/// at distance 1, 2, 4, ...). Addition is commutative in IEEE arithmetic,
/// so only the grouping matters.
void sumInTransportOrder(float *rows, int32_t size, int64_t k) {
  for (int32_t stride = 1; stride < size; stride *= 2)
    for (int32_t r = 0; r + stride < size; r += 2 * stride) {
      float *into = rows + r * k;
      const float *from = rows + (r + stride) * k;
      for (int64_t j = 0; j < k; ++j)
        into[j] += from[j];
    }
}

/// Refuses a learner's non-finite input (|m + g| beyond float32, or NaN),
/// naming the learner, as the multi-rank agreement names the rank.
/// `largestKey`: the scan's (only called while scanForNonFinite()).
gradcomm_status requireFinite(const Call &call, uint32_t largestKey,
                              int32_t learner) {
  if (!cpu::exceedsLimit(largestKey,
                         wireInputLimit(GRADCOMM_WIRE_F32, /*summed=*/true)))
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_NON_FINITE,
                   "learner " + std::to_string(learner) +
                       " holds a non-finite value (or one that overflows "
                       "the sum)");
}

void countDense(gradcomm_learners group, const std::string &name, int64_t count,
                double start) {
  gradcomm_op_stats &stats = group->stats[name];
  stats.calls += 1;
  countValueReduce(stats, count, GRADCOMM_WIRE_F32, group->size);
  stats.seconds += now() - start;
}

/// The dense all-reduce of the rows at `inputs` into `out`.
gradcomm_status denseSum(const Call &call, gradcomm_learners group,
                         const std::vector<const float *> &inputs, float *out,
                         int64_t count, bool average) {
  if (scanForNonFinite())
    for (int32_t r = 0; r < group->size; ++r)
      GRADCOMM_RETURN_IF_ERROR(
          requireFinite(call, cpu::maxMagnitudeKey(inputs[r], count), r));
  std::vector<float> &rows = group->rows;
  rows.resize(static_cast<size_t>(count) * group->size);
  for (int32_t r = 0; r < group->size; ++r)
    std::copy(inputs[r], inputs[r] + count, rows.begin() + r * count);
  sumInTransportOrder(rows.data(), group->size, count);
  std::copy(rows.begin(), rows.begin() + count, out);
  if (average)
    divideBySize(out, count, group->size);
  return GRADCOMM_OK;
}

/// The compressed step (CpuBackend::scalecom on every learner): the
/// leader's selection on its m + input, every learner's gather and
/// low-pass update, the values summed, scattered into `out`.
gradcomm_status compressedStep(const Call &call, gradcomm_learners group,
                               const gradcomm_scalecom_options &o,
                               LearnerStates &states,
                               const std::vector<const float *> &inputs,
                               float *out, int64_t count, int64_t k,
                               bool average) {
  const int32_t n = group->size;
  const uint64_t step = states.states[0]->step;
  const int32_t leader = static_cast<int32_t>(step % n);
  State &lead = *states.states[leader];
  std::vector<int64_t> indices(k);
  // The exact selection's pass also scans the leader (as on the ranks).
  bool leaderScanned = false;
  uint32_t leaderKey = 0;
  if (o.selection == GRADCOMM_SELECT_CHUNK) {
    cpu::selectChunk(lead.data(), inputs[leader], count, o.chunk_size,
                     indices.data());
  } else {
    leaderKey = cpu::selectExact(lead.data(), inputs[leader], count, k,
                                 indices.data(), group->scratch);
    leaderScanned = true;
  }
  if (scanForNonFinite())
    for (int32_t r = 0; r < n; ++r)
      GRADCOMM_RETURN_IF_ERROR(
          requireFinite(call,
                        r == leader && leaderScanned
                            ? leaderKey
                            : cpu::maxMagnitudeKeySum(states.states[r]->data(),
                                                      inputs[r], count),
                        r));
  group->rows.resize(static_cast<size_t>(k) * n);
  for (int32_t r = 0; r < n; ++r) {
    State &state = *states.states[r];
    state.indices = indices; // what the index broadcast leaves everywhere
    cpu::gatherAndUpdate(state.data(), inputs[r], count, indices.data(), k,
                         o.beta, group->rows.data() + r * k,
                         r == 0 ? out : nullptr);
  }
  sumInTransportOrder(group->rows.data(), n, k);
  if (average)
    divideBySize(group->rows.data(), k, n);
  cpu::scatter(out, indices.data(), group->rows.data(), k);
  return GRADCOMM_OK;
}

/// The index broadcast (coded as the CPU backend codes the indices, in a
/// message of its own) and the value all-reduce of a compressed step.
void countCompressed(gradcomm_learners group, const std::string &name,
                     const CompressStep &step, double start) {
  gradcomm_op_stats &stats = group->stats[name];
  stats.calls += 1;
  countIndexBroadcast(stats, cpuBackend().indexCoding(step).bytes(),
                      group->size, /*ownMessage=*/true);
  countValueReduce(stats, step.k, step.wire, group->size);
  stats.seconds += now() - start;
}

/// The checks every learner call shares.
gradcomm_status validateRows(const Call &call, gradcomm_learners group,
                             const char *name, const float *grads, float *out,
                             int64_t count, gradcomm_reduction reduction) {
  GRADCOMM_RETURN_IF_ERROR(requireGroup(call, group));
  GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", name));
  GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, 1));
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "grads", grads));
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "out", out));
  GRADCOMM_RETURN_IF_ERROR(requireReduction(call, reduction));
  if (out < grads + count * group->size && grads < out + count)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "'grads' and 'out' overlap");
  return GRADCOMM_OK;
}

std::vector<const float *> rowsOf(const float *grads, int64_t count,
                                  int32_t size) {
  std::vector<const float *> rows(size);
  for (int32_t r = 0; r < size; ++r)
    rows[r] = grads + r * count;
  return rows;
}

} // namespace

gradcomm_status gradcomm_learners_create(int32_t learners,
                                         gradcomm_learners *group) {
  return guarded(
      "learners_create", "learners",
      [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "group", group));
        *group = nullptr;
        GRADCOMM_RETURN_IF_ERROR(
            requireRange(call, "learners", learners, 2, kMaxLearners));
        auto made = std::make_unique<gradcomm_learners_s>();
        made->size = learners;
        *group = made.release();
        return GRADCOMM_OK;
      },
      kWorld);
}

void gradcomm_learners_destroy(gradcomm_learners group) { delete group; }

gradcomm_status gradcomm_learners_dense_f32(gradcomm_learners group,
                                            const char *opName,
                                            const float *grads, float *out,
                                            int64_t count,
                                            gradcomm_reduction reduction) {
  return guarded(
      "learners_dense_f32", opName,
      [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(
            validateRows(call, group, opName, grads, out, count, reduction));
        const double start = now();
        GRADCOMM_RETURN_IF_ERROR(
            denseSum(call, group, rowsOf(grads, count, group->size), out, count,
                     reduction == GRADCOMM_REDUCE_AVERAGE));
        countDense(group, opName, count, start);
        return GRADCOMM_OK;
      },
      kWorld);
}

gradcomm_status gradcomm_learners_scalecom_recipe_f32(
    gradcomm_learners group, const char *stateName, const float *grads,
    float *out, int64_t count, const gradcomm_scalecom_options *options,
    gradcomm_reduction reduction) {
  return guarded(
      "learners_scalecom_recipe_f32", stateName,
      [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(
            validateRows(call, group, stateName, grads, out, count, reduction));
        GRADCOMM_RETURN_IF_ERROR(validateRecipe(call, options));
        GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, options->k));
        const gradcomm_scalecom_options &o = *options;
        if (o.wire != GRADCOMM_WIRE_F32)
          return call.fail(GRADCOMM_ERR_UNSUPPORTED,
                           "simulated learners send float32 values only");
        LearnerStates *states = nullptr, *velocities = nullptr;
        GRADCOMM_RETURN_IF_ERROR(
            lookupLearnerStates(call, group, stateName, count, states));
        if (o.momentum > 0.0f) {
          GRADCOMM_RETURN_IF_ERROR(lookupLearnerStates(
              call, group, velocityName(stateName), count, velocities));
          for (const std::unique_ptr<State> &velocity : velocities->states)
            GRADCOMM_RETURN_IF_ERROR(reserveNextVelocity(
                call, *extensions().hostBackend, *velocity));
        }
        const double start = now();
        const uint64_t step = states->states[0]->step;
        const bool dense = denseStep(o, step);
        const int64_t k = stepK(o, count, step);
        if (!dense) {
          // The compressed step's own checks (a chunk size that fits k).
          const CompressArgs args{stateName,   grads,        count, k,
                                  o.selection, o.chunk_size, o.wire};
          GRADCOMM_RETURN_IF_ERROR(validateCompress(call, args));
        }
        const int32_t n = group->size;
        std::vector<const float *> inputs(n);
        for (int32_t r = 0; r < n; ++r)
          inputs[r] =
              recipeInput(o, grads + r * count, count, *states->states[r],
                          velocities ? velocities->states[r].get() : nullptr);
        const bool average = reduction == GRADCOMM_REDUCE_AVERAGE;
        GRADCOMM_RETURN_IF_ERROR(
            dense ? denseSum(call, group, inputs, out, count, average)
                  : compressedStep(call, group, o, *states, inputs, out, count,
                                   k, average));
        for (int32_t r = 0; r < n; ++r) {
          commitVelocity(*states->states[r],
                         velocities ? velocities->states[r].get() : nullptr,
                         masksVelocity(o, !dense));
          states->states[r]->step += 1;
        }
        if (dense)
          countDense(group, stateName, count, start);
        else
          countCompressed(
              group, stateName,
              {*states->states[0], grads, count, k, o.selection,
               o.selection == GRADCOMM_SELECT_CHUNK ? o.chunk_size : 0, 0,
               o.wire},
              start);
        return GRADCOMM_OK;
      },
      kWorld);
}

gradcomm_status gradcomm_learners_local_topk_f32(gradcomm_learners group,
                                                 const char *stateName,
                                                 const float *grads, float *out,
                                                 int64_t count, int64_t k,
                                                 gradcomm_reduction reduction,
                                                 int64_t *unionSize) {
  return guarded(
      "learners_local_topk_f32", stateName,
      [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(
            validateRows(call, group, stateName, grads, out, count, reduction));
        GRADCOMM_RETURN_IF_ERROR(requireCountAndK(call, count, k));
        LearnerStates *states = nullptr;
        GRADCOMM_RETURN_IF_ERROR(
            lookupLearnerStates(call, group, stateName, count, states));
        const double start = now();
        const int32_t n = group->size;
        // Each learner's own selection (CpuBackend::prepareLocalTopk, whose
        // pass is also the non-finite scan), then plain error feedback
        // (beta = 1) into its block of the gathered rows.
        std::vector<int64_t> indices(static_cast<size_t>(k) * n);
        for (int32_t r = 0; r < n; ++r) {
          const uint32_t key = cpu::selectExact(
              states->states[r]->data(), grads + r * count, count, k,
              indices.data() + r * k, group->scratch);
          if (scanForNonFinite())
            GRADCOMM_RETURN_IF_ERROR(requireFinite(call, key, r));
        }
        group->rows.resize(static_cast<size_t>(k) * n);
        for (int32_t r = 0; r < n; ++r)
          cpu::gatherAndUpdate(states->states[r]->data(), grads + r * count,
                               count, indices.data() + r * k, k, 1.0f,
                               group->rows.data() + r * k,
                               r == 0 ? out : nullptr);
        const int64_t distinct =
            sumBlocksInRankOrder(group->rows.data(), indices, out,
                                 reduction == GRADCOMM_REDUCE_AVERAGE, n);
        for (auto &state : states->states)
          state->step += 1;
        if (unionSize)
          *unionSize = distinct;
        gradcomm_op_stats &stats = group->stats[stateName];
        countLocalTopk(stats, k, GRADCOMM_WIRE_F32, n, distinct);
        stats.seconds += now() - start;
        return GRADCOMM_OK;
      },
      kWorld);
}

gradcomm_status gradcomm_learners_state_read(gradcomm_learners group,
                                             const char *stateName,
                                             int32_t learner, float *out,
                                             int64_t count) {
  return guarded(
      "learners_state_read", stateName,
      [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(requireGroup(call, group));
        GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
        GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "out", out));
        GRADCOMM_RETURN_IF_ERROR(
            requireRange(call, "learner", learner, 0, group->size - 1));
        auto it = group->states.find(stateName);
        if (it == group->states.end())
          return call.fail(GRADCOMM_ERR_STATE,
                           std::string("no state '") + stateName + "'");
        if (it->second.count != count)
          return call.fail(GRADCOMM_ERR_STATE,
                           std::string("state '") + stateName + "' holds " +
                               std::to_string(it->second.count) +
                               " elements, not " + std::to_string(count));
        const float *data = it->second.states[learner]->data();
        std::copy(data, data + count, out);
        return GRADCOMM_OK;
      },
      kWorld);
}

gradcomm_status gradcomm_learners_stats_get(gradcomm_learners group,
                                            const char *opName,
                                            gradcomm_op_stats *stats) {
  return guarded(
      "learners_stats_get", opName,
      [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(requireGroup(call, group));
        GRADCOMM_RETURN_IF_ERROR(requireName(call, "op_name", opName));
        GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "stats", stats));
        auto it = group->stats.find(opName);
        *stats = it == group->stats.end() ? gradcomm_op_stats{} : it->second;
        return GRADCOMM_OK;
      },
      kWorld);
}
