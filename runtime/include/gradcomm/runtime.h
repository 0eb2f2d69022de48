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
 * gradcomm_finalize(); a trainer that initialized MPI keeps ownership of it.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GRADCOMM_RUNTIME_H
#define GRADCOMM_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; its C ABI is exported. */
#pragma GCC visibility push(default)

/// Result of every runtime call.
typedef enum gradcomm_status {
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
} gradcomm_status;

/// How a collective combines the contributions of the group. Values match
/// the `gradcomm` dialect's Reduction enum.
typedef enum gradcomm_reduction {
  GRADCOMM_REDUCE_SUM = 0,
  /// Sum divided by the group size.
  GRADCOMM_REDUCE_AVERAGE = 1,
} gradcomm_reduction;

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

/// Releases the runtime's resources; finalizes MPI only if gradcomm_init
/// initialized it. The runtime can be initialized again afterwards unless
/// MPI was finalized.
gradcomm_status gradcomm_finalize(void);

/// This rank's index in, and the size of, the runtime's communicator.
gradcomm_status gradcomm_rank(int *rank);
gradcomm_status gradcomm_size(int *size);

/// Dense all-reduce of `count` float32 values in place across the
/// communicator: sum, or sum divided by the group size. `op_name` names the
/// operation in error messages and counters (may be NULL). Counts above
/// 2^31 - 1 are sent in several messages.
gradcomm_status gradcomm_dense_all_reduce_f32(const char *op_name, float *data,
                                              int64_t count,
                                              gradcomm_reduction reduction);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRADCOMM_RUNTIME_H */
