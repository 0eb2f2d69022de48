//===- InitOwnershipTest.cpp - The runtime owns MPI only if it started it -===//
//
// Part of the GradComm project.
//
// No MPI_Init here: the runtime must initialize MPI on first use and
// finalize it in gradcomm_finalize(). Plain main (no GoogleTest), since
// MPI cannot be re-initialized after the check.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/runtime.h"

#include <mpi.h>

#include <cstdio>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__,         \
                   __LINE__, #cond, gradcomm_last_error());                    \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main() {
  int initialized = 1;
  MPI_Initialized(&initialized);
  CHECK(!initialized);

  // First use initializes MPI on MPI_COMM_WORLD.
  float x = 2.0f;
  CHECK(gradcomm_dense_all_reduce_f32("first_use", &x, 1,
                                      GRADCOMM_REDUCE_AVERAGE) == GRADCOMM_OK);
  CHECK(x == 2.0f);
  MPI_Initialized(&initialized);
  CHECK(initialized);
  int size = 0;
  CHECK(gradcomm_size(&size) == GRADCOMM_OK);
  int worldSize = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  CHECK(size == worldSize);

  // Finalizing the runtime finalizes the MPI it started.
  CHECK(gradcomm_finalize() == GRADCOMM_OK);
  int finalized = 0;
  MPI_Finalized(&finalized);
  CHECK(finalized);

  // After that, use is a clear error, not a crash.
  CHECK(gradcomm_dense_all_reduce_f32("after", &x, 1, GRADCOMM_REDUCE_SUM) ==
        GRADCOMM_ERR_NOT_INITIALIZED);
  std::printf("init ownership: ok\n");
  return 0;
}
