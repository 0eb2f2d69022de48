//===- CompressSteps.h - What the compressing entry points share -*- C++
//-*-===//
//
// Part of the GradComm project.
//
// The steps of every CLT-k entry point (ScaleCom.cpp: the fused step and
// its unfused ops; ReduceScatter.cpp: the compressed reduce-scatter):
// arguments, the backend's preparation with the agreement, the counters.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_OPS_COMPRESSSTEPS_H
#define GRADCOMM_RUNTIME_OPS_COMPRESSSTEPS_H

#include "Backend.h"

#include <optional>
#include <string>
#include <vector>

namespace gradcomm {

/// Arguments shared by the compress entry points, validated once.
struct CompressArgs {
  const char *state;
  const float *grad;
  int64_t count;
  int64_t k;
  gradcomm_selection selection;
  int64_t chunkSize;
  gradcomm_wire wire = GRADCOMM_WIRE_F32;
  /// Selection per segment (CompressStep's fields), or none.
  const int64_t *segmentEnds = nullptr;
  const int64_t *segmentK = nullptr;
  int64_t segments = 0;
};

/// The compress arguments' checks: state name, count and k, the selection.
gradcomm_status validateCompress(const Call &call, const CompressArgs &args);

/// beta in (0, 1].
gradcomm_status validateBeta(const Call &call, float beta);

/// What every rank of a compression must agree on.
std::vector<CheckField> compressFields(const CompressArgs &args,
                                       const State &state);

/// The step as the backend sees it.
CompressStep stepOf(const CompressArgs &args, State &state);

/// The backend's preparation and the agreement (with the leader's indices
/// in its message when they fold), `extra` agreed on too. `*skipped`: the
/// non-finite policy skipped the call, nothing was selected or written.
gradcomm_status prepareAndAgree(const Call &call, const CompressArgs &args,
                                const CompressStep &step,
                                const std::vector<CheckField> &extra,
                                Prepared &prepared, bool *skipped);

/// Counts the index broadcast's bytes (folded indices count the same, in
/// no message of their own).
void countCompress(gradcomm_op_stats &stats, const CompressStep &step,
                   bool foldsIndices);

/// The same for `codedBytes` of indices broadcast over `size` ranks.
void countIndexBroadcast(gradcomm_op_stats &stats, int64_t codedBytes, int size,
                         bool ownMessage);

/// Counts one all-reduce of k values travelling as `wire`.
void countValueReduce(gradcomm_op_stats &stats, int64_t k,
                      gradcomm_wire wire = GRADCOMM_WIRE_F32);

/// The same over `size` ranks.
void countValueReduce(gradcomm_op_stats &stats, int64_t k, gradcomm_wire wire,
                      int size);

/// Counts one local top-k call (LocalTopk.cpp): the ring all-gathers of k
/// values as `wire` and k int64 indices over `size` ranks, and the union.
void countLocalTopk(gradcomm_op_stats &stats, int64_t k, gradcomm_wire wire,
                    int size, int64_t distinct);

/// [a, a + count) and [b, b + count) share an element.
bool overlaps(const float *a, const float *b, int64_t count);

// The training recipe's parts (defined in ScaleCom.cpp), shared with the
// compressed reduce-scatter's recipe form.

/// The options' checks (gradcomm_scalecom_recipe_f32's refusals).
gradcomm_status validateRecipe(const Call &call,
                               const gradcomm_scalecom_options *options);

/// The options as one agreement field.
std::vector<CheckField> recipeFields(const gradcomm_scalecom_options &options);

/// Step `step` of a state with these options is a dense one (a dense layer
/// or the dense warm-up).
bool denseStep(const gradcomm_scalecom_options &options, uint64_t step);

/// This step's k (a ramp warm-up's k_t, else options.k).
int64_t stepK(const gradcomm_scalecom_options &options, int64_t count,
              uint64_t step);

/// A velocity state's nextVelocity, allocated by `host` (a backend whose
/// tensors are on the host) unless it already is: call it where the state
/// is looked up, so a rank that cannot allocate fails with the others.
gradcomm_status reserveNextVelocity(const Call &call, const Backend &host,
                                    State &velocity);

/// What the step communicates: `grad`, clipped, through the velocity
/// (`velocity` null: none; else its nextVelocity is reserved and receives
/// u'). With `scan`, and when the velocity's pass makes the input (u',
/// not Nesterov's), that pass also takes the non-finite scan of |m + u'|
/// (m: the state's memory) into *scan, for Prepared::inputScan.
const float *recipeInput(const gradcomm_scalecom_options &options,
                         const float *grad, int64_t count, State &state,
                         State *velocity,
                         std::optional<uint32_t> *scan = nullptr);

/// After a step that ran: the velocity becomes u' (its nextVelocity,
/// swapped in), zeroed at the sent indices (state.indices) when `masked`.
void commitVelocity(const State &state, State *velocity, bool masked);

/// Whether a step that ran masks the velocity at the sent indices: a
/// compressed step without `keep_velocity`.
inline bool masksVelocity(const gradcomm_scalecom_options &options,
                          bool compressed) {
  return compressed && options.keep_velocity == 0;
}

/// The state's device scratch for the recipe's parts that `options` turn
/// on (a backend whose tensors are not on the host), allocated once.
gradcomm_status reserveDeviceRecipe(const Call &call,
                                    const gradcomm_scalecom_options &options,
                                    int64_t count, State &state, bool velocity);

/// recipeInput for a backend whose tensors are not on the host: the same
/// steps through the backend (Backend::deviceClip, deviceVelocity), into
/// the state's device scratch (reserveDeviceRecipe); `*input` is what the
/// step communicates.
gradcomm_status deviceRecipeInput(const Call &call,
                                  const gradcomm_scalecom_options &options,
                                  const float *grad, int64_t count,
                                  State &state, const State *velocity,
                                  const float **input);

/// The velocity's state: "<state>.velocity".
std::string velocityName(const char *stateName);

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_OPS_COMPRESSSTEPS_H
