/*===- runtime.h - GradComm runtime C ABI ---------------------------------===*
 *
 * Part of the GradComm project.
 *
 * The library that compiled GradComm code and hand-written trainers call.
 * Plain C, no LLVM. Every entry point returns a gradcomm_status; on failure
 * gradcomm_last_error() names the operation, the rank and the cause.
 *
 * MPI: the runtime uses MPI_COMM_WORLD unless the trainer hands in its own
 * communicator (gradcomm/runtime_mpi.h). It calls MPI_Init only if MPI is
 * not initialized yet, and then also calls MPI_Finalize in
 * gradcomm_finalize(); a trainer that initialized MPI keeps ownership of it,
 * and its MPI_Finalize alone releases what the runtime holds in MPI (a
 * delete callback on MPI_COMM_SELF): gradcomm_finalize is optional then.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GRADCOMM_RUNTIME_H
#define GRADCOMM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The enums are int-sized in C and C++. In C++ they get `int` as their
 * underlying type, so any int a C caller passes (an unknown value the
 * runtime rejects) is a valid value to read: the runtime validates it
 * instead of reading an out-of-range enum, which is undefined behaviour. */
#ifdef __cplusplus
#define GRADCOMM_ENUM(name) enum name : int
#else
#define GRADCOMM_ENUM(name) enum name
#endif

/* The library is built with hidden visibility; its C ABI is exported. */
#pragma GCC visibility push(default)

/// Result of every runtime call.
typedef GRADCOMM_ENUM(gradcomm_status){
    GRADCOMM_OK = 0,
    /// A bad argument caught locally (null pointer, negative count, ...).
    GRADCOMM_ERR_INVALID_ARGUMENT = 1,
    /// The MPI library reported an error.
    GRADCOMM_ERR_MPI = 2,
    /// The runtime is not initialized, or initialization failed.
    GRADCOMM_ERR_NOT_INITIALIZED = 3,
    /// Ranks called a collective with different arguments.
    GRADCOMM_ERR_MISMATCH = 4,
    /// Out of memory.
    GRADCOMM_ERR_NO_MEMORY = 5,
    /// Anything else the runtime could not do (message says what).
    GRADCOMM_ERR_INTERNAL = 6,
    /// An input held NaN, Inf or a magnitude the group's sum could overflow
    /// on some rank, under GRADCOMM_NONFINITE_ERROR: nothing was changed on
    /// any rank (memory, counter and output untouched).
    GRADCOMM_ERR_NON_FINITE = 7,
    /// A file could not be read or written, or is corrupt or mismatched.
    GRADCOMM_ERR_IO = 8,
    /// A named state does not exist, or exists with another size.
    GRADCOMM_ERR_STATE = 9,
    /// The operation or backend is not available here (message says why).
    GRADCOMM_ERR_UNSUPPORTED = 10,
    /// A collective waited longer than the timeout (gradcomm_set_timeout,
    /// GRADCOMM_TIMEOUT) for its peers. MPI collectives cannot be cancelled,
    /// so the runtime prints the message and aborts the job (MPI_Abort with
    /// this code): the status is what the other ranks' launcher reports.
    GRADCOMM_ERR_TIMEOUT = 11,
} gradcomm_status;

/// Where tensors live and which kernels and transport run.
typedef GRADCOMM_ENUM(gradcomm_backend){
    /// Host pointers, CPU kernels, MPI.
    GRADCOMM_BACKEND_CPU = 0,
    /// Device pointers, CUDA kernels, NCCL (libgradcomm_runtime_cuda.so).
    GRADCOMM_BACKEND_CUDA = 1,
} gradcomm_backend;

/// How a collective combines the contributions of the group. Values match
/// the `gradcomm` dialect's Reduction enum.
typedef GRADCOMM_ENUM(gradcomm_reduction){
    GRADCOMM_REDUCE_SUM = 0,
    /// Sum divided by the group size.
    GRADCOMM_REDUCE_AVERAGE = 1,
} gradcomm_reduction;

/// Leader index selection of ScaleCom. Values match the dialect's
/// Selection enum.
typedef GRADCOMM_ENUM(gradcomm_selection){
    /// True top-k of |m + g|; ties go to the lower index.
    GRADCOMM_SELECT_EXACT = 0,
    /// Top-1 of |m + g| in every chunk of chunk_size consecutive elements.
    GRADCOMM_SELECT_CHUNK = 1,
} gradcomm_selection;

/// The type values travel in between ranks. Tensors stay float32 in
/// memory (and the error-feedback memory with them); a 16-bit wire rounds
/// each value to nearest even before it is sent, so a value crosses half
/// the bytes. MPI reduces a 16-bit type pairwise, rounding each partial sum
/// to 16 bits: with n ranks a sum is rounded n - 1 times (once at 2 ranks,
/// as if accumulated in float32). CPU backend; on the CUDA backend the
/// dense all-reduce, the ScaleCom recipe, the local top-k and gossip
/// (narrowed and widened on the device, summed by NCCL in the 16-bit
/// type).
typedef GRADCOMM_ENUM(gradcomm_wire){
    GRADCOMM_WIRE_F32 = 0,
    /// bfloat16: float32's range, 8 significant bits.
    GRADCOMM_WIRE_BF16 = 1,
    /// IEEE binary16: 11 significant bits, magnitudes up to 65504; under
    /// the non-finite policy a value that could overflow the 16-bit sum
    /// (above 65504 / (2 n)) counts as non-finite.
    GRADCOMM_WIRE_F16 = 2,
} gradcomm_wire;

/// Gossip peer schedule. Values match the dialect's Schedule enum.
typedef GRADCOMM_ENUM(gradcomm_schedule){
    /// Random perfect matching drawn from (seed, step); odd n: one rank sits
    /// out.
    GRADCOMM_SCHEDULE_MATCHING = 0,
    /// Left/right neighbour by the parity of step + rank (no wrap-around for
    /// odd n: the rank without a partner sits out).
    GRADCOMM_SCHEDULE_RING = 1,
    /// rank XOR 2^(step mod log2 n); n must be a power of two.
    GRADCOMM_SCHEDULE_HYPERCUBE = 2,
    /// An independent, uniformly random peer per rank and step, drawn from
    /// (seed, rank, step), as in the gossip paper. Not a pairing:
    /// asynchronous gossip only.
    GRADCOMM_SCHEDULE_RANDOM = 3,
} gradcomm_schedule;

/// What a collective does when some rank's input is not finite (NaN,
/// Inf, or a magnitude the sum over the group could overflow).
typedef GRADCOMM_ENUM(gradcomm_nonfinite_policy){
    /// Every rank returns GRADCOMM_ERR_NON_FINITE naming the lowest
    /// offending rank; nothing is changed (memory, step counter, buffers).
    GRADCOMM_NONFINITE_ERROR = 0,
    /// Every rank returns GRADCOMM_OK as if every input had been zero: the
    /// reduced output is zeros, gossip leaves the replica as it is, memory
    /// and step counter are unchanged. Counted in skipped_non_finite.
    GRADCOMM_NONFINITE_SKIP = 1,
    /// No scan: values flow through as IEEE arithmetic makes them.
    GRADCOMM_NONFINITE_PROPAGATE = 2,
} gradcomm_nonfinite_policy;

/// The message of the last failed call on this thread:
/// "gradcomm: <operation> '<op name>' on rank <r> of <n>: <cause>".
/// Empty when no call has failed. Valid until the next failing call.
const char *gradcomm_last_error(void);

/// A short constant name for a status ("GRADCOMM_ERR_MPI").
const char *gradcomm_status_name(gradcomm_status status);

/// Initializes the runtime on MPI_COMM_WORLD (initializing MPI first when
/// the trainer has not). Idempotent. Every other entry point initializes on
/// first use, so calling this is optional.
gradcomm_status gradcomm_init(void);

/// A key-value rendezvous every rank of the job reaches (a
/// torch.distributed store, say), for gradcomm_init_with_rendezvous. Keys
/// and values are NUL-terminated strings; each function returns 0 on
/// success. The functions run on a thread of the runtime's, one call at a
/// time.
typedef struct gradcomm_rendezvous {
  /// Publishes `value` under `key` for every rank.
  int (*set)(void *user, const char *key, const char *value);
  /// Copies the value of `key` into `value` (at most `capacity` bytes, the
  /// NUL included), waiting until some rank has set it, for at most the
  /// rendezvous's own timeout (then it fails).
  int (*get)(void *user, const char *key, char *value, size_t capacity);
  void *user;
} gradcomm_rendezvous;

/// Initializes MPI and the runtime for rank `rank` of `size` processes
/// that were not started by mpiexec (torchrun, srun without PMI, a test
/// harness): MPI_COMM_WORLD is then these `size` processes in rank order,
/// and every entry point works as under mpiexec. MPI's start-up exchange
/// runs through `rendezvous` (copied; its functions and `user` must stay
/// valid until gradcomm_finalize); its traffic does not. MPICH only. Fails
/// if MPI is already initialized (use gradcomm_init), or on a rendezvous
/// failure, naming it. Idempotent for the same rank and size.
gradcomm_status
gradcomm_init_with_rendezvous(int rank, int size,
                              const gradcomm_rendezvous *rendezvous);

/// Releases the runtime's resources; finalizes MPI only if gradcomm_init
/// initialized it. The runtime can be initialized again afterwards unless
/// MPI was finalized. Optional before the trainer's own MPI_Finalize, which
/// releases the same (docs/runtime.md, "The finalize contract").
gradcomm_status gradcomm_finalize(void);

/// Selects the backend (default: GRADCOMM_BACKEND env, `cpu` or `cuda`,
/// else cpu). Switching needs no live state (finalize or reset first). The
/// CUDA backend loads libgradcomm_runtime_cuda.so and bootstraps NCCL over
/// the MPI communicator; without the library, a device or a driver this is
/// GRADCOMM_ERR_UNSUPPORTED with the reason. With the CUDA backend, tensor
/// pointers are device pointers and every operation here is available.
gradcomm_status gradcomm_set_backend(gradcomm_backend backend);
gradcomm_status gradcomm_get_backend(gradcomm_backend *backend);

/// This rank's index in, and the size of, the runtime's communicator
/// (every rank of the job, whichever group is active).
gradcomm_status gradcomm_rank(int *rank);
gradcomm_status gradcomm_size(int *size);

/*===----------------------------------------------------------------------===*
 * Groups: collectives among the ranks of some axes of a process grid.
 *===----------------------------------------------------------------------===*/

/// The ranks a collective runs among. NULL stands for every rank.
typedef struct gradcomm_group_s *gradcomm_group;

/// The group of this rank over `axes` of a row-major process grid of
/// `shape` (`dims` axes, whose product must be the job's size): the ranks
/// whose coordinates equal this rank's on every other axis, as the `shard`
/// dialect defines a collective's process group. Ranks in the group are
/// ordered by their coordinates on `axes`. On a 2x2 grid, axes {0} gives
/// {0, 2} and {1, 3}; axes {1} gives {0, 1} and {2, 3}; axes {0, 1} every
/// rank. Collective over every rank the first time a grid and axes are
/// asked for (the ranks agree on them, then split the communicator); later
/// calls with the same grid and axes return the same handle without
/// communicating. Groups live until gradcomm_finalize. On the CUDA backend
/// each group also has its own NCCL communicator (ncclCommSplit).
gradcomm_status gradcomm_group_from_grid(const int64_t *shape, int32_t dims,
                                         const int32_t *axes,
                                         int32_t axis_count,
                                         gradcomm_group *group);

/// Makes `group` (NULL: every rank) the active group: every later
/// collective call communicates among its ranks, with ranks and sizes
/// counted in it, until the next gradcomm_group_use. Error messages of
/// calls in a group name it and the rank in the job. Checkpoints, the
/// counters' dump and the backend are job-wide whatever group is active.
/// An asynchronous op's state stays in the group it was first used in.
gradcomm_status gradcomm_group_use(gradcomm_group group);

/// This rank's index in `group` (NULL: every rank) and the group's size;
/// either pointer may be NULL.
gradcomm_status gradcomm_group_rank(gradcomm_group group, int *rank, int *size);

/// Dense all-reduce of `count` float32 values in place across the
/// communicator: sum, or sum divided by the group size. `op_name` names the
/// operation in error messages and counters (may be NULL). Counts above
/// 2^31 - 1 are sent in several messages.
gradcomm_status gradcomm_dense_all_reduce_f32(const char *op_name, float *data,
                                              int64_t count,
                                              gradcomm_reduction reduction);

/// gradcomm_dense_all_reduce_f32 with the values travelling as `wire`
/// (gradcomm_wire): `data` stays float32, each value is rounded to the wire
/// type, reduced in it, and the result (then the mean, divided in float32)
/// written back. CPU and CUDA backends.
gradcomm_status
gradcomm_dense_all_reduce_wire_f32(const char *op_name, float *data,
                                   int64_t count, gradcomm_wire wire,
                                   gradcomm_reduction reduction);

/// A call in flight: started by gradcomm_dense_all_reduce_start_f32 or
/// gradcomm_scalecom_start_f32, ended by gradcomm_wait.
typedef struct gradcomm_request_s *gradcomm_request;

/// The non-blocking form of gradcomm_dense_all_reduce_f32, so a trainer
/// can overlap the reduction with computation or start several. It checks
/// the arguments and joins the agreement like the blocking form (a
/// collective: every rank starts its requests in the same order, and a
/// mismatch or non-finite input fails on every rank here, with nothing
/// started), then starts the reduction and returns at once with
/// `*request` set. `data` must not be read or written until
/// gradcomm_wait returns. On error `*request` is NULL. On the CUDA backend
/// the work is enqueued on the backend's stream and the wait polls its
/// completion under the watchdog (docs/runtime.md, Backends). Every started
/// request must be waited for before gradcomm_finalize (which otherwise
/// returns GRADCOMM_ERR_STATE and finalizes nothing).
gradcomm_status
gradcomm_dense_all_reduce_start_f32(const char *op_name, float *data,
                                    int64_t count, gradcomm_reduction reduction,
                                    gradcomm_request *request);

/// The non-blocking form of gradcomm_dense_all_reduce_wire_f32: the values
/// are rounded now, reduced until gradcomm_wait, which widens them back
/// into `data` (not to be touched until then). CPU and CUDA backends.
gradcomm_status gradcomm_dense_all_reduce_wire_start_f32(
    const char *op_name, float *data, int64_t count, gradcomm_wire wire,
    gradcomm_reduction reduction, gradcomm_request *request);

/// Run-time bucketing: the dense all-reduce of `tensors` buffers
/// (`data[t]`, `counts[t]` elements each) as one call. One agreement
/// covers the batch (the number of tensors and every count, in order; the
/// non-finite policy applies to the batch as a whole); tensors below 4096
/// elements are packed into shared buckets of at most 64K elements, larger
/// ones are reduced in place, and every bucket and tensor is in flight at
/// once. So many small tensors pay a few MPI calls' latency instead of two
/// collectives each. Sums of the same values as separate calls (with 3 or
/// more ranks MPI may add a bucket in another order than a lone tensor:
/// equal up to rounding, identical on every rank). CPU backend only.
gradcomm_status
gradcomm_dense_all_reduce_many_f32(const char *op_name, float *const *data,
                                   const int64_t *counts, int64_t tensors,
                                   gradcomm_reduction reduction);

/// Waits (under the watchdog) for the request, finishes the call (the
/// average; ScaleCom's scatter into `out`), counts it under its op name,
/// frees the request and sets `*request` to NULL. Requests may be waited
/// for in any order. A NULL `*request` (never started, or already waited
/// for) is GRADCOMM_ERR_INVALID_ARGUMENT.
gradcomm_status gradcomm_wait(gradcomm_request *request);

/// The watchdog: a collective that waits more than `seconds` for its peers
/// (a rank stopped, crashed, stuck on a device, or in another operation)
/// prints "gradcomm: <op> '<name>' on rank r of n: timed out after S s
/// waiting for <peers>" and aborts the job with GRADCOMM_ERR_TIMEOUT.
/// 0 switches it off. Default: GRADCOMM_TIMEOUT (seconds, or "off") from
/// the environment at initialization, else 600.
gradcomm_status gradcomm_set_timeout(double seconds);

/// Consistency check (on by default): before each collective, one small
/// all-reduce compares the call's sizes and parameters across ranks and
/// shares whether any rank's gradient is non-finite, so a mismatch becomes
/// GRADCOMM_ERR_MISMATCH on every rank instead of a hang, and a NaN/Inf
/// skips the step everywhere. Switch off (0) for the last microseconds; the
/// environment variable GRADCOMM_CONSISTENCY_CHECK=0 does the same.
gradcomm_status gradcomm_set_consistency_check(int enabled);

/// The non-finite policy of every collective (all ranks must set the same;
/// the agreement carries it). Default: GRADCOMM_NONFINITE from the
/// environment at initialization ("error", "skip" or "propagate"), else
/// error. The scan runs only with the consistency check on; with it off,
/// values propagate whatever the policy.
gradcomm_status gradcomm_set_nonfinite_policy(gradcomm_nonfinite_policy policy);
gradcomm_status
gradcomm_get_nonfinite_policy(gradcomm_nonfinite_policy *policy);

/// The first non-OK status a compiled step's runtime calls returned since
/// the last call of this function, and clears it (GRADCOMM_OK if none).
/// Code compiled with `gradcomm-to-runtime{on-error=return}` stops a step
/// at its first failing call instead of aborting the job and records the
/// status here; gradcomm_last_error() has the message. Direct API calls do
/// not record here: they return their status.
gradcomm_status gradcomm_take_step_status(void);

/*===----------------------------------------------------------------------===*
 * Persistent state: error-feedback memories and step counters, per rank.
 *===----------------------------------------------------------------------===*/

/// Declares state `name` with a float32 memory of `count` elements (0: a
/// counter only), zero-initialized. Declaring it again with the same count
/// is a no-op; with another count it is GRADCOMM_ERR_STATE. Entry points
/// that take a state name declare it on first use.
gradcomm_status gradcomm_state_declare(const char *name, int64_t count);

/// Zeroes the memory and the counter of `name`, or of every state when
/// `name` is NULL.
gradcomm_status gradcomm_state_reset(const char *name);

/// The step counter of `name`.
gradcomm_status gradcomm_state_step(const char *name, uint64_t *step);

/// Copies the memory of `name` (`count` elements, which must match) into
/// `out` (host memory).
gradcomm_status gradcomm_state_read(const char *name, float *out,
                                    int64_t count);

/// Collective: writes every state of this rank to `<path>.rank<r>` as a new
/// generation (versioned format with a checksum), in two phases: all ranks
/// write and fsync a temporary file; only when all succeeded does each
/// keep its current file as `<path>.rank<r>.prev` and put the new one in
/// place. A failure on any rank is the same GRADCOMM_ERR_IO on every rank,
/// and the previous checkpoint is untouched.
gradcomm_status gradcomm_state_save(const char *path);

/// Collective: replaces every state of this rank with the newest generation
/// that every rank has complete (its `<path>.rank<r>` or `.prev`). A
/// missing, truncated, corrupt or mismatched file (other version, rank or
/// group size, a state twice, a state whose size differs from a live one)
/// does not count; with no generation left, every rank gets GRADCOMM_ERR_IO
/// and the live state is unchanged.
gradcomm_status gradcomm_state_restore(const char *path);

/// The checkpoint generation this process last saved or restored (0 when
/// none): after a restore, which generation was taken.
gradcomm_status gradcomm_state_generation(uint64_t *generation);

/*===----------------------------------------------------------------------===*
 * ScaleCom (docs/design/architecture.md section 2), float32, host pointers.
 *===----------------------------------------------------------------------===*/

/// One ScaleCom step of gradient `grad` (`count` elements) with the state
/// `state` (memory m and step t):
///   p = m + g; leader l = t mod n selects k indices I from |p_l| and
///   broadcasts them; out = scatter(I, reduce(p_i[I])) (zero elsewhere);
///   m = (1 - beta) m + beta (p - scatter(I, p[I])); t = t + 1.
/// With GRADCOMM_SELECT_CHUNK, k must be ceil(count / chunk_size).
/// `grad` and `out` may not overlap. On error nothing is changed.
gradcomm_status gradcomm_scalecom_f32(const char *state, const float *grad,
                                      float *out, int64_t count, int64_t k,
                                      gradcomm_selection selection,
                                      int64_t chunk_size, float beta,
                                      gradcomm_reduction reduction);

/// The non-blocking form of gradcomm_scalecom_f32: the agreement, the
/// leader's selection, the index broadcast and the fused gather + memory
/// update run here (the state's memory and step move on now), then the
/// value all-reduce is started and the call returns with `*request` set.
/// gradcomm_wait completes it: the mean and the scatter into `out`, which
/// holds zeros until then. So the selection of the next tensor overlaps the
/// reduction of this one: start every tensor, then wait for each. `grad`
/// may be reused at once; `out` must not be touched until the wait. The
/// state may not be used again (nor reset, restored or finalized) before
/// the wait: GRADCOMM_ERR_STATE. Same bits as the blocking form. On CUDA
/// the whole step is enqueued on the backend's stream (`grad` is read in
/// stream order).
gradcomm_status gradcomm_scalecom_start_f32(
    const char *state, const float *grad, float *out, int64_t count, int64_t k,
    gradcomm_selection selection, int64_t chunk_size, float beta,
    gradcomm_reduction reduction, gradcomm_request *request);

/*===----------------------------------------------------------------------===*
 * Reduce-scatter for sharded data parallelism (docs/scalecom.md, "Sharded
 * training"). CPU backend, over any transport; CUDA backend (NCCL),
 * blocking forms only.
 *===----------------------------------------------------------------------===*/

/// The shard of `rank` among `size` ranks of a buffer of `count` elements:
/// elements [*begin, *begin + *length). The first count mod size shards
/// hold one element more than the others (all equal when size divides
/// count), as the reduce-scatters below cut their output.
gradcomm_status gradcomm_shard_range(int64_t count, int rank, int size,
                                     int64_t *begin, int64_t *length);

/// Dense reduce-scatter: the sum (or mean) over the active group of `data`
/// (`count` elements on every rank), of which this rank's shard
/// (gradcomm_shard_range with its rank in the group) is written to `shard`.
/// `data` and `shard` must not overlap. Agreement and non-finite policy as
/// for gradcomm_dense_all_reduce_f32 (a skipped call writes zeros).
gradcomm_status gradcomm_reduce_scatter_f32(const char *op_name,
                                            const float *data, float *shard,
                                            int64_t count,
                                            gradcomm_reduction reduction);

/// The non-blocking form: `data` and `shard` must not be touched until
/// gradcomm_wait.
gradcomm_status gradcomm_reduce_scatter_start_f32(const char *op_name,
                                                  const float *data,
                                                  float *shard, int64_t count,
                                                  gradcomm_reduction reduction,
                                                  gradcomm_request *request);

/// gradcomm_reduce_scatter_f32 and its started form with the values
/// travelling as `wire` (gradcomm_wire): `data` and `shard` stay float32,
/// each value is rounded to the 16-bit type before it is sent and the
/// transport sums in that type (as gradcomm_dense_all_reduce_wire_f32),
/// so a value crosses half the bytes. Under the non-finite policy a
/// binary16 value above 65504 / (2 n) counts as non-finite. CPU and CUDA
/// backends (the started form: CPU backend).
gradcomm_status gradcomm_reduce_scatter_wire_f32(const char *op_name,
                                                 const float *data,
                                                 float *shard, int64_t count,
                                                 gradcomm_wire wire,
                                                 gradcomm_reduction reduction);
gradcomm_status gradcomm_reduce_scatter_wire_start_f32(
    const char *op_name, const float *data, float *shard, int64_t count,
    gradcomm_wire wire, gradcomm_reduction reduction,
    gradcomm_request *request);

/// ScaleCom for sharded training: the step of gradcomm_scalecom_f32 (the
/// leader's top-k of m + g over the whole local gradient, the same indices
/// on every rank, the memory update), except that the k selected values
/// are reduce-scattered instead of all-reduced: this rank's `shard` (its
/// shard of the gradient, gradcomm_shard_range) receives zeros and, at the
/// selected indices that fall in it, the sum (or mean) of every rank's
/// value there. One index set for all ranks is what lets the sum commute
/// with the selection, as in gradcomm_scalecom_f32. Each rank sends about
/// k (n - 1) / n values instead of count (n - 1) / n.
gradcomm_status gradcomm_scalecom_reduce_scatter_f32(
    const char *state, const float *grad, float *shard, int64_t count,
    int64_t k, gradcomm_selection selection, int64_t chunk_size, float beta,
    gradcomm_reduction reduction);

/// The non-blocking form: the selection, the index broadcast and the
/// memory update run here (`grad` may be reused at once), the values'
/// reduce-scatter is started; gradcomm_wait writes `shard`.
gradcomm_status gradcomm_scalecom_reduce_scatter_start_f32(
    const char *state, const float *grad, float *shard, int64_t count,
    int64_t k, gradcomm_selection selection, int64_t chunk_size, float beta,
    gradcomm_reduction reduction, gradcomm_request *request);

/// The non-blocking form of gradcomm_local_topk_all_gather_f32 (without
/// the union size): the local selection, the agreement and the
/// error-feedback pass run here, the all-gathers of values and indices are
/// started; gradcomm_wait sums the blocks into `out` (zeros until then) and
/// counts. The state is held until the wait (GRADCOMM_ERR_STATE for any
/// other use, a checkpoint, a reset or finalize). Same bits as the blocking
/// form; the union size is counted at the wait (gradcomm_stats_get's
/// last_union_size). On CUDA the whole call is enqueued on the backend's
/// stream (`grad` is read in stream order).
gradcomm_status gradcomm_local_topk_all_gather_start_f32(
    const char *state, const float *grad, float *out, int64_t count, int64_t k,
    gradcomm_reduction reduction, gradcomm_request *request);

/// The three ops of the dialect, for unfused code. `compress` writes the k
/// leader indices (ascending) and this rank's values p[I];
/// `sparse_all_reduce` reduces values across ranks and scatters them into
/// `out` (`count` elements); `memory_update` applies the low-pass update for
/// the same step and advances the counter.
gradcomm_status gradcomm_cltk_compress_f32(const char *state, const float *grad,
                                           int64_t count, int64_t k,
                                           gradcomm_selection selection,
                                           int64_t chunk_size, float *values,
                                           int64_t *indices);
gradcomm_status
gradcomm_sparse_all_reduce_f32(const char *op_name, const float *values,
                               const int64_t *indices, int64_t k, float *out,
                               int64_t count, gradcomm_reduction reduction);
/// gradcomm_sparse_all_reduce_f32 started: arguments and agreement here,
/// `values` and `indices` copied (free at once), the all-reduce of the
/// values started; gradcomm_wait averages, zeroes `out` and scatters into
/// it. `out` is off limits until then. Same bits as the blocking form.
/// On CUDA enqueued on the backend's stream (`values` and `indices` are
/// read in stream order).
gradcomm_status gradcomm_sparse_all_reduce_start_f32(
    const char *op_name, const float *values, const int64_t *indices, int64_t k,
    float *out, int64_t count, gradcomm_reduction reduction,
    gradcomm_request *request);
gradcomm_status gradcomm_memory_update_f32(const char *state, const float *grad,
                                           int64_t count,
                                           const int64_t *indices, int64_t k,
                                           float beta);

/*===----------------------------------------------------------------------===*
 * The ScaleCom training recipe (docs/scalecom.md, "The recipe").
 *===----------------------------------------------------------------------===*/

/// What the first `warmup_steps` calls of a recipe state do.
typedef GRADCOMM_ENUM(gradcomm_warmup){
    /// Dense all-reduce; the memory is left alone.
    GRADCOMM_WARMUP_DENSE = 0,
    /// ScaleCom at a ratio rising geometrically from `warmup_start_ratio`
    /// to count / k (exact selection only).
    GRADCOMM_WARMUP_RAMP = 1,
} gradcomm_warmup;

/// The options of gradcomm_scalecom_recipe_f32; gradcomm_scalecom_options_init
/// fills the defaults.
typedef struct gradcomm_scalecom_options {
  /// Values sent per step after the warm-up, in [1, count].
  int64_t k;
  gradcomm_selection selection;
  /// The chunk length with GRADCOMM_SELECT_CHUNK (k = ceil(count / chunk)).
  int64_t chunk_size;
  /// Low-pass coefficient of the memory update, in (0, 1].
  float beta;
  /// The first `warmup_steps` calls (the state's step counts every call)
  /// follow `warmup`.
  int64_t warmup_steps;
  gradcomm_warmup warmup;
  /// GRADCOMM_WARMUP_RAMP's first ratio, >= 1.
  float warmup_start_ratio;
  /// Momentum correction, in [0, 1) (0: off): u = momentum u + g is what is
  /// communicated, and u is zeroed where it was sent (factor masking) unless
  /// `keep_velocity`. The optimizer then runs without momentum. Both
  /// backends (the compressed reduce-scatter: CPU backend).
  float momentum;
  /// With momentum: communicate g + momentum u (Nesterov).
  int32_t nesterov;
  /// > 0: g is scaled to an L2 norm of at most `clip` first. Both backends
  /// (the compressed reduce-scatter: CPU backend).
  float clip;
  /// 1: always a dense all-reduce (a layer the policy keeps dense); the
  /// velocity is then never masked, so the mean of the ranks' velocities is
  /// momentum SGD's.
  int32_t dense;
  /// The type the values (selected or dense) travel in; indices are as
  /// without it. 16 bits: CPU and CUDA backends.
  gradcomm_wire wire;
  /// With momentum: 1 keeps the velocity where it was sent (no factor
  /// masking), so a coordinate sent every step keeps its momentum and at
  /// k = count the recipe is momentum SGD; 0 (the default) zeroes it there,
  /// as deep gradient compression does (docs/scalecom.md, "The recipe").
  int32_t keep_velocity;
} gradcomm_scalecom_options;

/// Defaults for sending k values, the recipe docs/results.md's study chose:
/// exact selection, beta 0.5, 100 dense warm-up steps; no momentum
/// correction (it changes the optimizer) or clipping; not dense.
void gradcomm_scalecom_options_init(gradcomm_scalecom_options *options,
                                    int64_t k);

/// One step of the recipe with state `state` (memory m, step t and, with
/// momentum, the velocity in the state "<state>.velocity"): g is clipped,
/// u' = momentum u + g and s = u' (g + momentum u' with Nesterov), or s = g
/// without momentum; then a dense all-reduce of s into `out` (dense, or
/// t < warmup_steps with a dense warm-up), or gradcomm_scalecom_f32's step
/// on s with k (or the ramp's k_t) after which u = u' with zeros at the
/// sent indices; t = t + 1. Every rank must pass the same options (part of
/// the agreement). On error, or a step the non-finite policy skips, nothing
/// is changed. Memory and velocity are saved by gradcomm_state_save.
gradcomm_status gradcomm_scalecom_recipe_f32(
    const char *state, const float *grad, float *out, int64_t count,
    const gradcomm_scalecom_options *options, gradcomm_reduction reduction);

/// The started form: on the CPU backend everything but the value
/// all-reduce runs here (velocity and memory move on now), on the CUDA
/// backend the step is enqueued on the backend's stream; gradcomm_wait
/// completes `out`. The state is held until the wait.
gradcomm_status gradcomm_scalecom_recipe_start_f32(
    const char *state, const float *grad, float *out, int64_t count,
    const gradcomm_scalecom_options *options, gradcomm_reduction reduction,
    gradcomm_request *request);

/// Sharded training's parameter all-gather: every rank's `shard` (its
/// gradcomm_shard_range of `count` elements; the group size must divide
/// `count`) lands at its range of `data` on every rank. Dense; agreement
/// on the count, no non-finite scan (parameters are not summed). `shard`
/// may be `data`'s own range of this rank (in place). CPU backend.
gradcomm_status gradcomm_all_gather_f32(const char *op_name, const float *shard,
                                        float *data, int64_t count);

/// gradcomm_scalecom_reduce_scatter_recipe_f32 with the selection made per
/// segment: `grad` holds `segments` consecutive tensors (a flat parameter
/// of sharded training), segment s ending at segment_ends[s] (strictly
/// increasing, the last equal to `count`). On a compressed step the leader
/// selects, in each segment, the exact top segment_k[s] of |m + s| (0:
/// none, as for padding; the segment's length: all of it, a tensor kept
/// dense, whose velocity is then not masked, as with `dense`), so a small
/// tensor gets its share of k beside a large one;
/// options->k must be the sum of the segment_k (at least 1) and the
/// selection exact. The rest is the recipe's step: one index set for every
/// rank, the values reduce-scattered in options->wire, the memory (and
/// with momentum correction the velocity) updated. Every rank must pass
/// the same segments (part of the agreement); bad segments fail on every
/// rank, on dense steps too. CPU backend.
gradcomm_status gradcomm_scalecom_reduce_scatter_segments_f32(
    const char *state, const float *grad, float *shard, int64_t count,
    const int64_t *segment_ends, const int64_t *segment_k, int64_t segments,
    const gradcomm_scalecom_options *options, gradcomm_reduction reduction);

/// gradcomm_all_gather_f32 with the values travelling as `wire`
/// (gradcomm_wire): each value of `shard` is rounded to the 16-bit type, so
/// parameters that are bfloat16 (binary16) arrive exactly, in half the
/// bytes. CPU backend.
gradcomm_status gradcomm_all_gather_wire_f32(const char *op_name,
                                             const float *shard, float *data,
                                             int64_t count, gradcomm_wire wire);

/// The training recipe's form of gradcomm_scalecom_reduce_scatter_f32
/// (blocking), the shard of gradcomm_scalecom_recipe_f32's output: g is
/// clipped to `clip` when it is set; with momentum correction u' =
/// momentum u + g (the velocity, in the state "<state>.velocity", of the
/// unsharded length) and s = u' (g + momentum u' with Nesterov), else s =
/// g. Steps the options make dense (a dense layer, the dense warm-up)
/// reduce-scatter s and leave the memory alone; the others are
/// gradcomm_scalecom_reduce_scatter_f32's step on s, after which u = u'
/// with zeros at the sent indices (the same on every rank); t = t + 1
/// either way. The values (the k selected ones, or the dense step's)
/// travel as `options->wire` (16 bits: CPU and CUDA backends). Momentum
/// correction and clipping: CPU backend. A ramp warm-up is refused
/// (GRADCOMM_ERR_UNSUPPORTED on every rank). Every rank must pass the same
/// options.
gradcomm_status gradcomm_scalecom_reduce_scatter_recipe_f32(
    const char *state, const float *grad, float *shard, int64_t count,
    const gradcomm_scalecom_options *options, gradcomm_reduction reduction);

/*===----------------------------------------------------------------------===*
 * Local top-k + all-gather baseline (gradient build-up).
 *===----------------------------------------------------------------------===*/

/// Every rank selects its own exact top-k of p = m + g, keeps the rest in
/// its memory (m = p - c), all-gathers k values and k indices and sums (or
/// averages) the n sparse vectors into `out`. `union_size` (may be NULL)
/// receives the number of distinct indices across ranks.
gradcomm_status gradcomm_local_topk_all_gather_f32(
    const char *state, const float *grad, float *out, int64_t count, int64_t k,
    gradcomm_reduction reduction, int64_t *union_size);

/// gradcomm_local_topk_all_gather_f32 and its started form with the values
/// travelling as `wire` (gradcomm_wire): each rank's k values are rounded
/// to the 16-bit type just before the all-gather (half the value bytes)
/// and widened before the sum in float32; the memory keeps the float32
/// error feedback. A 16-bit wire: CPU and CUDA backends.
gradcomm_status gradcomm_local_topk_all_gather_wire_f32(
    const char *state, const float *grad, float *out, int64_t count, int64_t k,
    gradcomm_wire wire, gradcomm_reduction reduction, int64_t *union_size);
gradcomm_status gradcomm_local_topk_all_gather_wire_start_f32(
    const char *state, const float *grad, float *out, int64_t count, int64_t k,
    gradcomm_wire wire, gradcomm_reduction reduction,
    gradcomm_request *request);

/*===----------------------------------------------------------------------===*
 * Gossip (docs/design/architecture.md section 3).
 *===----------------------------------------------------------------------===*/

/// The peer of `rank` among `size` ranks at step `step`, or -1 when it sits
/// out. Pure: every rank computes the same pairing without messages.
gradcomm_status gradcomm_gossip_peer(gradcomm_schedule schedule, uint64_t seed,
                                     uint64_t step, int rank, int size,
                                     int *peer);

/// x = (1 - mixing) x + mixing x_peer in place, with the peer of this rank
/// at the state's step, on every `period`-th step; advances the counter
/// of `state` (a counter-only state) on every call.
gradcomm_status gradcomm_gossip_exchange_f32(const char *state, float *x,
                                             int64_t count,
                                             gradcomm_schedule schedule,
                                             float mixing, uint64_t seed,
                                             int64_t period);

/// The non-blocking form of gradcomm_gossip_exchange_f32: the agreement
/// and the non-finite policy run here and the exchange with the peer is
/// posted both ways; gradcomm_wait completes it and mixes. `x` must not be
/// touched until the wait. Start the exchanges of every tensor, then wait
/// for each: their latencies overlap. Same bits as the blocking form. On
/// CUDA enqueued on the backend's stream.
gradcomm_status gradcomm_gossip_exchange_start_f32(
    const char *state, float *x, int64_t count, gradcomm_schedule schedule,
    float mixing, uint64_t seed, int64_t period, gradcomm_request *request);

/// gradcomm_gossip_exchange_f32 and its started form with the replica
/// travelling as `wire` (gradcomm_wire): each rank's x is rounded to the
/// 16-bit type (to nearest even) just before it is sent, and the peer's
/// copy widened before the mix, which stays float32. For a model whose
/// parameters are bfloat16 (float16) the wire of their own type is exact
/// and halves the bytes. A 16-bit wire: CPU and CUDA backends; with
/// binary16 a value above 65504 counts as non-finite.
gradcomm_status gradcomm_gossip_exchange_wire_f32(
    const char *state, float *x, int64_t count, gradcomm_schedule schedule,
    float mixing, uint64_t seed, int64_t period, gradcomm_wire wire);
gradcomm_status gradcomm_gossip_exchange_wire_start_f32(
    const char *state, float *x, int64_t count, gradcomm_schedule schedule,
    float mixing, uint64_t seed, int64_t period, gradcomm_wire wire,
    gradcomm_request *request);

/// (1/n) sum_i ||x_i - mean(x)||^2 over the ranks (collective).
gradcomm_status gradcomm_consensus_distance_f32(const float *x, int64_t count,
                                                double *distance);

/*===----------------------------------------------------------------------===*
 * Elastic averaging, EASGD (Zhang et al. 2015; docs/gossip.md).
 *===----------------------------------------------------------------------===*/

/// Synchronous elastic averaging with the center variable replicated on
/// every rank in `state` (`count` floats, checkpointed like any state).
/// The state's first call sets the center to the mean of the replicas.
/// On every `period`-th call (tau), with d_i = x_i - c on rank i:
///
///   x_i = x_i - alpha d_i        c = c + alpha sum_i d_i
///
/// (one all-reduce of d per exchange), so sum_i x_i + c is unchanged by
/// the exchange. The counter of `state` advances on every call. Needs
/// 0 < alpha and n alpha <= 1 (n alpha is the center's moving rate, beta
/// in the paper). CPU backend only for now.
gradcomm_status gradcomm_elastic_average_f32(const char *state, float *x,
                                             int64_t count, float alpha,
                                             int64_t period);

/// gradcomm_elastic_average_f32 started: the agreement, the center's
/// initialization (the state's first call, blocking) and the counter happen
/// here, and an exchange's all-reduce is started; gradcomm_wait applies the
/// update to x and the center. Until then x must not be written and the
/// state refuses other calls. Same bits as the blocking form. CPU backend
/// only.
gradcomm_status gradcomm_elastic_average_start_f32(const char *state, float *x,
                                                   int64_t count, float alpha,
                                                   int64_t period,
                                                   gradcomm_request *request);

/// gradcomm_elastic_average_f32 and its started form with the differences
/// x - c travelling as `wire` (gradcomm_wire): rounded to the 16-bit type
/// before the all-reduce, which sums in float32 (Wire: n - 1 16-bit
/// roundings at n ranks); the center and the update stay float32, and the
/// center's first value (the replicas' mean) is reduced in float32. A
/// 16-bit wire: CPU backend; with binary16 a difference above
/// 65504 / (2 n) counts as non-finite.
gradcomm_status gradcomm_elastic_average_wire_f32(const char *state, float *x,
                                                  int64_t count, float alpha,
                                                  int64_t period,
                                                  gradcomm_wire wire);
gradcomm_status gradcomm_elastic_average_wire_start_f32(
    const char *state, float *x, int64_t count, float alpha, int64_t period,
    gradcomm_wire wire, gradcomm_request *request);

/*===----------------------------------------------------------------------===*
 * Asynchronous gossip and EASGD (docs/gossip.md): MPI-3 one-sided
 * operations; no rank waits for another after the first call.
 *
 * The first call on a state is collective (it creates the state's MPI
 * window; the ranks agree that every one of them could); later calls are
 * not. A failure after that (a non-finite replica under the error policy)
 * is written into every rank's window, so each rank's next asynchronous
 * call on that state fails with the same message. With windows open,
 * gradcomm_finalize is collective (MPI_Win_free). CPU backend only.
 *===----------------------------------------------------------------------===*/

/// On every `period`-th call: puts x (stamped with this rank's step and a
/// sequence number) into the mailbox of the scheduled peer under an
/// exclusive lock, then, if a copy y arrived in this rank's own mailbox
/// since its last mix, x = (1 - mixing) x + mixing y. A copy is mixed at
/// most once, never a torn one (its sequence number is written before and
/// after the data), and its staleness (this rank's step minus the step it
/// was pushed at) is counted (gradcomm_stats_staleness). Peers: any
/// schedule; GRADCOMM_SCHEDULE_RANDOM is the paper's.
gradcomm_status gradcomm_gossip_async_f32(const char *state, float *x,
                                          int64_t count,
                                          gradcomm_schedule schedule,
                                          float mixing, uint64_t seed,
                                          int64_t period);

/// Asynchronous elastic averaging: the center lives in rank 0's window
/// (set by the first call to the replicas' mean, or to the restored state).
/// On every `period`-th call this rank reads the center c (element-wise
/// atomic reads), moves x by e = alpha (x - c) and adds e to the center
/// (MPI_Accumulate: concurrent updates are never lost), without waiting for
/// the other ranks. `state` holds this rank's last view of the center;
/// gradcomm_state_read and gradcomm_state_save refresh it first.
gradcomm_status gradcomm_elastic_average_async_f32(const char *state, float *x,
                                                   int64_t count, float alpha,
                                                   int64_t period);

/// gradcomm_elastic_average_async_f32 with the center sharded: rank r's
/// window holds elements [r count / n, (r + 1) count / n) of it, and each
/// exchange visits the n parts one at a time, starting with this rank's
/// own, so the center's traffic is spread over every rank's link instead
/// of rank 0's. Same arguments, state and checkpoints; a state used with
/// one placement cannot be used with the other (GRADCOMM_ERR_STATE).
gradcomm_status gradcomm_elastic_average_sharded_f32(const char *state,
                                                     float *x, int64_t count,
                                                     float alpha,
                                                     int64_t period);

#define GRADCOMM_STALENESS_BINS 8

/// The staleness histogram of asynchronous gossip state `state` on this
/// rank: copies mixed with staleness 0, 1, 2, 3, 4-7, 8-15, 16-31, >= 32
/// steps; `torn` (may be null) gets the copies refused as torn.
gradcomm_status gradcomm_stats_staleness(const char *state,
                                         uint64_t histogram[8], uint64_t *torn);

/*===----------------------------------------------------------------------===*
 * Counters.
 *===----------------------------------------------------------------------===*/

/// Per named op on this rank. Bytes follow the documented cost model of
/// each collective (docs/runtime.md), values and indices apart.
typedef struct gradcomm_op_stats {
  uint64_t calls;
  uint64_t messages;
  uint64_t value_bytes_sent;
  uint64_t value_bytes_received;
  uint64_t index_bytes_sent;
  uint64_t index_bytes_received;
  double seconds;
  /// Local top-k only: distinct indices across ranks in the last call.
  int64_t last_union_size;
  /// Calls skipped under GRADCOMM_NONFINITE_SKIP (also counted in calls).
  uint64_t skipped_non_finite;
} gradcomm_op_stats;

/// The counters of `op_name` (zeros if it never ran).
gradcomm_status gradcomm_stats_get(const char *op_name,
                                   gradcomm_op_stats *stats);

/// Clears every counter.
gradcomm_status gradcomm_stats_reset(void);

/// Collective: rank 0 writes every rank's counters as one JSON document
/// to `path`.
gradcomm_status gradcomm_stats_dump(const char *path);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRADCOMM_RUNTIME_H */
