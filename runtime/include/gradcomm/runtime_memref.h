/*===- runtime_memref.h - GradComm runtime: entry points for MLIR code ----===*
 *
 * Part of the GradComm project.
 *
 * What compiled GradComm code calls. Tensors arrive as MLIR unranked memref
 * descriptors, the way a `func.func` declared with `llvm.emit_c_interface`
 * and `memref<*xf32>` arguments passes them: a pointer to {rank, pointer to
 * the ranked descriptor {allocated, aligned, offset, sizes[rank],
 * strides[rank]}} (CRunnerUtils' UnrankedMemRefType / StridedMemRefType).
 * Any rank is accepted; layouts that are not contiguous row-major are
 * rejected with GRADCOMM_ERR_INVALID_ARGUMENT. Enum arguments are the
 * integer values of the enums in runtime.h (equal to the dialect's).
 * Every function returns a gradcomm_status as int32_t.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GRADCOMM_RUNTIME_MEMREF_H
#define GRADCOMM_RUNTIME_MEMREF_H

#include "gradcomm/runtime.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

/// MLIR's unranked memref descriptor.
typedef struct gradcomm_unranked_memref {
  int64_t rank;
  void *descriptor;
} gradcomm_unranked_memref;

int32_t _mlir_ciface_gradcomm_rt_dense_all_reduce_f32(
    const char *op_name, gradcomm_unranked_memref *data, int32_t reduction);

int32_t _mlir_ciface_gradcomm_rt_scalecom_f32(const char *state,
                                              gradcomm_unranked_memref *grad,
                                              gradcomm_unranked_memref *out,
                                              int64_t k, int32_t selection,
                                              int64_t chunk_size, float beta,
                                              int32_t reduction);

/// gradcomm_scalecom_recipe_f32 with the options as the compiler has them:
/// `warmup_ramp_from` 0 is a dense warm-up, else a ramp from that ratio;
/// `clip` 0 is no clipping; `momentum` 0 is no momentum correction (else
/// the compiled step's optimizer is plain SGD); `nesterov` and `dense` are
/// the options' flags.
int32_t _mlir_ciface_gradcomm_rt_scalecom_recipe_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunk_size, float beta, int64_t warmup_steps,
    float warmup_ramp_from, float clip, float momentum, int32_t nesterov,
    int32_t dense, int32_t reduction);

/// 16-bit gradients of compiled code (bf16 and f16 memrefs; host memory):
/// widened into float32, the values travelling in the tensor's own 16 bits
/// (gradcomm_dense_all_reduce_wire_f32, gradcomm_scalecom_recipe_f32 with
/// `wire`), the result narrowed back into `data` or `out`. The
/// error-feedback memory stays float32.
int32_t _mlir_ciface_gradcomm_rt_dense_all_reduce_bf16(
    const char *op_name, gradcomm_unranked_memref *data, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_dense_all_reduce_f16(
    const char *op_name, gradcomm_unranked_memref *data, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_scalecom_recipe_bf16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunk_size, float beta, int64_t warmup_steps,
    float warmup_ramp_from, float clip, float momentum, int32_t nesterov,
    int32_t dense, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_scalecom_recipe_f16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunk_size, float beta, int64_t warmup_steps,
    float warmup_ramp_from, float clip, float momentum, int32_t nesterov,
    int32_t dense, int32_t reduction);

/// gradcomm_reduce_scatter_f32: `shard` holds this rank's
/// gradcomm_shard_range of `data`.
int32_t _mlir_ciface_gradcomm_rt_reduce_scatter_f32(
    const char *op_name, gradcomm_unranked_memref *data,
    gradcomm_unranked_memref *shard, int32_t reduction);

/// gradcomm_all_gather_f32: `shard` holds this rank's gradcomm_shard_range
/// of `data`.
int32_t _mlir_ciface_gradcomm_rt_all_gather_f32(const char *op_name,
                                                gradcomm_unranked_memref *shard,
                                                gradcomm_unranked_memref *data);

/// gradcomm_scalecom_reduce_scatter_recipe_f32 with the options as the
/// compiler has them: a dense warm-up of `warmup_steps`, `clip` 0 is no
/// clipping, `momentum` 0 no momentum correction, `dense` 1 a gradient kept
/// dense (through the recipe for its velocity). `shard` as for
/// gradcomm_rt_reduce_scatter_f32.
int32_t _mlir_ciface_gradcomm_rt_scalecom_reduce_scatter_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *shard, int64_t k, int32_t selection,
    int64_t chunk_size, float beta, int64_t warmup_steps, float clip,
    float momentum, int32_t nesterov, int32_t dense, int32_t reduction);

/// The sharded collectives of bf16 and f16 tensors (host memory): widened
/// into float32 for gradcomm_reduce_scatter_wire_f32,
/// gradcomm_all_gather_wire_f32 and gradcomm_scalecom_reduce_scatter_recipe_f32
/// with the values travelling in the tensors' own 16 bits, the result
/// narrowed back into `shard` (`data` for the all-gather). The
/// error-feedback memory stays float32.
int32_t _mlir_ciface_gradcomm_rt_reduce_scatter_bf16(
    const char *op_name, gradcomm_unranked_memref *data,
    gradcomm_unranked_memref *shard, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_reduce_scatter_f16(
    const char *op_name, gradcomm_unranked_memref *data,
    gradcomm_unranked_memref *shard, int32_t reduction);
int32_t
_mlir_ciface_gradcomm_rt_all_gather_bf16(const char *op_name,
                                         gradcomm_unranked_memref *shard,
                                         gradcomm_unranked_memref *data);
int32_t _mlir_ciface_gradcomm_rt_all_gather_f16(const char *op_name,
                                                gradcomm_unranked_memref *shard,
                                                gradcomm_unranked_memref *data);
int32_t _mlir_ciface_gradcomm_rt_scalecom_reduce_scatter_bf16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *shard, int64_t k, int32_t selection,
    int64_t chunk_size, float beta, int64_t warmup_steps, float clip,
    float momentum, int32_t nesterov, int32_t dense, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_scalecom_reduce_scatter_f16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *shard, int64_t k, int32_t selection,
    int64_t chunk_size, float beta, int64_t warmup_steps, float clip,
    float momentum, int32_t nesterov, int32_t dense, int32_t reduction);

/// `values`: k f32, `indices`: k i64.
int32_t _mlir_ciface_gradcomm_rt_cltk_compress_f32(
    const char *state, gradcomm_unranked_memref *grad, int64_t k,
    int32_t selection, int64_t chunk_size, gradcomm_unranked_memref *values,
    gradcomm_unranked_memref *indices);

int32_t _mlir_ciface_gradcomm_rt_sparse_all_reduce_f32(
    const char *op_name, gradcomm_unranked_memref *values,
    gradcomm_unranked_memref *indices, gradcomm_unranked_memref *out,
    int32_t reduction);

int32_t _mlir_ciface_gradcomm_rt_memory_update_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *indices, float beta);

int32_t _mlir_ciface_gradcomm_rt_local_topk_all_gather_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t reduction);

/// A bf16 or f16 gradient's local top-k step (host memory): widened into
/// float32, each rank's k values travelling in the gradient's own 16 bits
/// (gradcomm_local_topk_all_gather_wire_f32), the sum narrowed into `out`;
/// the error feedback stays float32.
int32_t _mlir_ciface_gradcomm_rt_local_topk_all_gather_bf16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_local_topk_all_gather_f16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t reduction);

int32_t _mlir_ciface_gradcomm_rt_gossip_exchange_f32(
    const char *state, gradcomm_unranked_memref *x, int32_t schedule,
    float mixing, int64_t seed, int64_t period);

int32_t
_mlir_ciface_gradcomm_rt_elastic_average_f32(const char *state,
                                             gradcomm_unranked_memref *x,
                                             float alpha, int64_t period);

/// A bf16 or f16 replica of compiled code (host memory): widened into
/// float32, exchanged (gossip) or pulled toward its float32 center (EASGD)
/// with the values travelling in its own 16 bits
/// (gradcomm_gossip_exchange_wire_f32, gradcomm_elastic_average_wire_f32),
/// narrowed back into `x`.
int32_t _mlir_ciface_gradcomm_rt_gossip_exchange_bf16(
    const char *state, gradcomm_unranked_memref *x, int32_t schedule,
    float mixing, int64_t seed, int64_t period);
int32_t _mlir_ciface_gradcomm_rt_gossip_exchange_f16(
    const char *state, gradcomm_unranked_memref *x, int32_t schedule,
    float mixing, int64_t seed, int64_t period);
int32_t
_mlir_ciface_gradcomm_rt_elastic_average_bf16(const char *state,
                                              gradcomm_unranked_memref *x,
                                              float alpha, int64_t period);
int32_t
_mlir_ciface_gradcomm_rt_elastic_average_f16(const char *state,
                                             gradcomm_unranked_memref *x,
                                             float alpha, int64_t period);

int32_t _mlir_ciface_gradcomm_rt_gossip_async_f32(const char *state,
                                                  gradcomm_unranked_memref *x,
                                                  int32_t schedule,
                                                  float mixing, int64_t seed,
                                                  int64_t period);

int32_t
_mlir_ciface_gradcomm_rt_elastic_average_async_f32(const char *state,
                                                   gradcomm_unranked_memref *x,
                                                   float alpha, int64_t period);

int32_t _mlir_ciface_gradcomm_rt_elastic_average_sharded_f32(
    const char *state, gradcomm_unranked_memref *x, float alpha,
    int64_t period);

/// The started forms generated code calls when collectives overlap
/// computation (gradcomm-overlap-collectives): the same arguments as the
/// blocking forms; the request is kept under the op (dense) or state
/// (ScaleCom, gossip, EASGD) name until gradcomm_rt_wait_f32(name, buffer),
/// where `buffer` is the buffer the call writes (passed only so that nothing
/// frees or reuses it before the wait). In a failed step a wait returns
/// the step's failure; a started call still completes.
int32_t _mlir_ciface_gradcomm_rt_dense_all_reduce_start_f32(
    const char *op_name, gradcomm_unranked_memref *data, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_scalecom_start_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunk_size, float beta, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_scalecom_recipe_start_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunk_size, float beta, int64_t warmup_steps,
    float warmup_ramp_from, float clip, float momentum, int32_t nesterov,
    int32_t dense, int32_t reduction);
int32_t _mlir_ciface_gradcomm_rt_gossip_exchange_start_f32(
    const char *state, gradcomm_unranked_memref *x, int32_t schedule,
    float mixing, int64_t seed, int64_t period);
int32_t
_mlir_ciface_gradcomm_rt_elastic_average_start_f32(const char *state,
                                                   gradcomm_unranked_memref *x,
                                                   float alpha, int64_t period);
int32_t _mlir_ciface_gradcomm_rt_wait_f32(const char *name,
                                          gradcomm_unranked_memref *buffer);

/// Stops the job when `status` is a failure: prints gradcomm_last_error()
/// (op, rank, cause) to stderr and calls MPI_Abort. Generated code passes
/// every status through it (convert-gradcomm-to-runtime{on-error=abort}).
void gradcomm_rt_check(int32_t status);

/// Keeps the first failed `status` of a step for
/// gradcomm_take_step_status() (on-error=return: the generated code then
/// skips the rest of the step).
void gradcomm_rt_record(int32_t status);

/// 1 while the current compiled step has recorded no failure, else 0 (the
/// guards gradcomm-guard-failed-steps puts around the step's writes).
int32_t gradcomm_rt_step_ok(void);

/// Stops the job unless the job has `expected` ranks: a step compiled for
/// a grid of n processes must run on n.
void gradcomm_rt_expect_group_size(int64_t expected);

/// Makes the group `spec` the active one (gradcomm_group_use): "SHAPE:AXES"
/// such as "2x2:0" (axis 0 of a 2x2 grid; made on first use,
/// gradcomm_group_from_grid), or "" for every rank. Generated code selects
/// a collective's group before the call and every rank after it. In a
/// failed step (on-error=return) it returns the step's failure, and ""
/// still selects every rank.
int32_t gradcomm_rt_use_group(const char *spec);

/// Every buffer compiled code allocates (finalize-memref-to-llvm with
/// use-generic-functions, renamed by gradcomm-own-memref-runtime from
/// MLIR's _mlir_memref_to_llvm_* so that no other library in the process
/// can take these calls): host memory on the CPU backend, device memory on
/// the CUDA backend. Buffers a compiled step returns are the caller's:
/// release them with gradcomm_free_buffer (plain free() also works on the
/// CPU backend).
void *gradcomm_memref_alloc(size_t size);
void *gradcomm_memref_aligned_alloc(size_t alignment, size_t size);
void gradcomm_memref_free(void *pointer);
void gradcomm_free_buffer(void *allocated);

/// memref.copy between buffers whose layouts are not both contiguous (the
/// slices of convolution gradients, concatenations): c_runner_utils'
/// memrefCopy, which finalize-memref-to-llvm calls, under the runtime's
/// name (gradcomm-own-memref-runtime), with the same unranked-descriptor
/// ABI. Host buffers only.
void gradcomm_memref_copy(int64_t element_size,
                          gradcomm_unranked_memref *source,
                          gradcomm_unranked_memref *destination);

/// This rank and the group size (shard.process_multi_index,
/// shard.grid_shape); stop the job if the runtime cannot start.
int64_t gradcomm_rt_rank(void);
int64_t gradcomm_rt_size(void);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRADCOMM_RUNTIME_MEMREF_H */
