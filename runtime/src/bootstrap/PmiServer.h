//===- PmiServer.h - MPICH's process-manager interface over a rendezvous --===//
//
// Part of the GradComm project.
//
// A process started without mpiexec (by torchrun, say) still gets a full
// MPI_COMM_WORLD: before MPI_Init, the runtime answers MPICH's own
// process-manager protocol (PMI-1, the "simple" wire protocol mpiexec's
// Hydra speaks over the PMI_FD socket) from a thread of this process, and
// serves its key-value space and barriers from the caller's rendezvous (a
// torch.distributed store). MPI itself (UCX, shared memory) then carries
// every byte as under mpiexec; the rendezvous only carries the addresses
// MPI exchanges at MPI_Init, and the barriers of MPI_Init and
// MPI_Finalize.
//
// Depends on nothing else in the runtime: Context.cpp starts it.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_PMISERVER_H
#define GRADCOMM_RUNTIME_PMISERVER_H

#include "gradcomm/runtime.h"

#include <string>

namespace gradcomm {

/// Starts the server for rank `rank` of `size` over `rendezvous` (copied;
/// its functions and `user` must stay valid until MPI finalizes) and sets
/// PMI_FD, PMI_RANK and PMI_SIZE, so the next MPI_Init of this process
/// joins the other ranks. The server answers until MPI_Finalize (or the
/// process exits). On failure returns false with the cause in `error`.
bool startPmiServer(int rank, int size, const gradcomm_rendezvous &rendezvous,
                    std::string &error);

/// Unsets what startPmiServer set in the environment (after MPI_Init read
/// it), so child processes do not inherit a socket that is not theirs.
void clearPmiEnvironment();

/// The first failure of the server since it started (a rendezvous
/// operation that failed, a command it does not serve), or "".
std::string pmiServerError();

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_PMISERVER_H
