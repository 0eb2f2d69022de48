/*===- runtime_mpi.h - GradComm runtime: trainer-owned MPI communicator ---===*
 *
 * Part of the GradComm project.
 *
 * For trainers that run GradComm on a communicator of their own (a subset of
 * the job, or a duplicate kept apart from their other traffic).
 *
 *===----------------------------------------------------------------------===*/

#ifndef GRADCOMM_RUNTIME_MPI_H
#define GRADCOMM_RUNTIME_MPI_H

#include "gradcomm/runtime.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; its C ABI is exported. */
#pragma GCC visibility push(default)

/// Initializes the runtime on `comm`, which the trainer owns and must keep
/// alive until gradcomm_finalize(). MPI must already be initialized.
/// Fails if the runtime is already initialized on another communicator.
gradcomm_status gradcomm_init_with_comm(MPI_Comm comm);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRADCOMM_RUNTIME_MPI_H */
