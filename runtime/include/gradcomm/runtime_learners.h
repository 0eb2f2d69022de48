/*===- runtime_learners.h - GradComm runtime: many learners, one process --===*
 *
 * Part of the GradComm project.
 *
 * n data-parallel learners simulated in one process, for studies at a
 * scale the machine has no cores for (docs/learners.md). Each call takes
 * every learner's gradient (n rows of `count` floats, row r learner r's)
 * and writes what every learner receives, as the multi-rank op would on
 * each rank: the same kernels (the leader's selection, the fused memory
 * update, the scatter), the same recipe (warm-up, momentum correction,
 * clipping), the leader rotating with the step, and the values summed in
 * the order MPICH's all-reduce sums them on 2 and 4 ranks (a pairwise tree
 * in rank order), so the result has the multi-rank runs' bits there
 * (test/Python/learners_ops.py checks it). Every learner keeps its own
 * error-feedback memory and velocity.
 *
 * Needs no gradcomm_init and uses no MPI: a handle is a group of its own.
 * Float32 on the host only; a handle is used by one thread at a time.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GRADCOMM_RUNTIME_LEARNERS_H
#define GRADCOMM_RUNTIME_LEARNERS_H

#include "gradcomm/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; its C ABI is exported. */
#pragma GCC visibility push(default)

typedef struct gradcomm_learners_s *gradcomm_learners;

/// A group of `learners` (2 to 1024) simulated learners, with no states.
gradcomm_status gradcomm_learners_create(int32_t learners,
                                         gradcomm_learners *group);

/// Frees the group and every learner's states (NULL: nothing).
void gradcomm_learners_destroy(gradcomm_learners group);

/// The dense all-reduce (gradcomm_dense_all_reduce_f32) of the learners'
/// rows into `out`.
gradcomm_status gradcomm_learners_dense_f32(gradcomm_learners group,
                                            const char *op_name,
                                            const float *grads, float *out,
                                            int64_t count,
                                            gradcomm_reduction reduction);

/// gradcomm_scalecom_recipe_f32 over the learners: state `state` (and
/// "<state>.velocity" with momentum correction) per learner, declared with
/// `count` elements on first use. Only GRADCOMM_WIRE_F32.
gradcomm_status gradcomm_learners_scalecom_recipe_f32(
    gradcomm_learners group, const char *state, const float *grads, float *out,
    int64_t count, const gradcomm_scalecom_options *options,
    gradcomm_reduction reduction);

/// gradcomm_local_topk_all_gather_f32 over the learners (each its own
/// top-k, plain error feedback); `*union_size` (may be NULL): the distinct
/// indices of this call.
gradcomm_status gradcomm_learners_local_topk_f32(gradcomm_learners group,
                                                 const char *state,
                                                 const float *grads, float *out,
                                                 int64_t count, int64_t k,
                                                 gradcomm_reduction reduction,
                                                 int64_t *union_size);

/// Learner `learner`'s copy of `state` (count floats).
gradcomm_status gradcomm_learners_state_read(gradcomm_learners group,
                                             const char *state, int32_t learner,
                                             float *out, int64_t count);

/// The counters of `op_name` as one learner's gradcomm_stats_get would
/// give them in an n-rank job (bytes by the same cost model; seconds are
/// the simulation's own).
gradcomm_status gradcomm_learners_stats_get(gradcomm_learners group,
                                            const char *op_name,
                                            gradcomm_op_stats *stats);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRADCOMM_RUNTIME_LEARNERS_H */
