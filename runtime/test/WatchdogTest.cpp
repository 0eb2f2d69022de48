//===- WatchdogTest.cpp - A stopped rank ends the job in bounded time
//------===//
//
// Part of the GradComm project.
//
// Rank 1 never joins (it sleeps, as a stopped or stuck rank would); rank 0
// calls a collective. With GRADCOMM_TIMEOUT=1 rank 0 must print the timeout
// message and abort the job within seconds; the wrapper script
// (watchdog.sh) checks the exit status, the message and the time.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/runtime.h"

#include <mpi.h>

#include <cstdio>
#include <unistd.h>
#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 1) {
    sleep(120); // never joins; the watchdog of rank 0 ends the job first
  } else {
    std::vector<float> data(16, 1.0f);
    gradcomm_status status = gradcomm_dense_all_reduce_f32(
        "watchdog", data.data(), 16, GRADCOMM_REDUCE_SUM);
    std::printf("rank %d: returned %d: %s\n", rank, status,
                gradcomm_last_error());
  }
  MPI_Finalize();
  return 0;
}
