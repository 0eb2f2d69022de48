/*===- runtime_cuda.h - GradComm runtime: trainer-owned NCCL and stream ---===*
 *
 * Part of the GradComm project.
 *
 * For trainers that already have an NCCL communicator and a CUDA stream:
 * hand them in before selecting the CUDA backend, and the runtime uses them
 * instead of bootstrapping its own (they must span the same ranks as the
 * runtime's MPI communicator, in the same order). Opaque pointers, so this
 * header needs neither cuda_runtime.h nor nccl.h.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GRADCOMM_RUNTIME_CUDA_H
#define GRADCOMM_RUNTIME_CUDA_H

#include "gradcomm/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

/// `nccl_comm` is an ncclComm_t, `cuda_stream` a cudaStream_t (either may be
/// NULL: the runtime then creates its own). Call before
/// gradcomm_set_backend(GRADCOMM_BACKEND_CUDA). The runtime's work on the
/// stream is ordered after the trainer's; its own stream is ordered with
/// nothing. CUDA's legacy default stream (PyTorch's default) has the handle
/// NULL too: pass it as cudaStreamLegacy.
gradcomm_status gradcomm_cuda_use_handles(void *nccl_comm, void *cuda_stream);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRADCOMM_RUNTIME_CUDA_H */
