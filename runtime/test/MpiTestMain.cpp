//===- MpiTestMain.cpp - GoogleTest main for multi-rank runtime tests -----===//
//
// Part of the GradComm project.
//
// Every rank runs every test; the process exits non-zero on every rank if
// any rank failed, so mpiexec and ctest report the failure.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/runtime.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>

int main(int argc, char **argv) {
  // MPI_THREAD_MULTIPLE, as a trainer of the asynchronous ops asks for
  // (their progress thread needs it; docs/gossip.md).
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  // The asynchronous ops' progress thread under this program's MPI: it
  // calls gradcomm_finalize before MPI_Finalize (docs/runtime.md, "The
  // finalize contract"). A value set by the user wins.
  setenv("GRADCOMM_ASYNC_PROGRESS", "1", /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    // Keep one copy of the progress output; failures still print on every
    // rank through the default printer's failure messages.
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int localFailed = RUN_ALL_TESTS() != 0;
  if (localFailed)
    fprintf(stderr, "rank %d: tests failed\n", rank);
  int anyFailed = 0;
  MPI_Allreduce(&localFailed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  gradcomm_finalize();
  MPI_Finalize();
  return anyFailed;
}
