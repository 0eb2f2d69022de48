//===- FinalizeByMpiTest.cpp - MPI_Finalize alone releases the runtime ----===//
//
// Part of the GradComm project.
//
// A trainer that owns MPI, runs asynchronous gossip and EASGD steps (their
// MPI windows stay open) and ends with MPI_Finalize alone, without
// gradcomm_finalize: the runtime must release what it holds in MPI when MPI
// finalizes, so every rank exits 0 (finalize-by-mpi.sh also checks that the
// transport printed no warning). With "error", rank 1's replica turns
// non-finite first, so every rank's asynchronous calls fail, and the exit
// must be as clean. Under the trainer's MPI the runtime starts no progress
// thread (nothing of it may be inside MPI when MPI_Finalize starts), which
// the test checks by counting the process's threads. With "pumped"
// (finalize-by-mpi.sh sets GRADCOMM_ASYNC_PROGRESS=1) the trainer asks for
// the thread and calls gradcomm_finalize before MPI_Finalize, as the
// contract says. Plain main: MPI is finalized once per process.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/runtime.h"

#include <dirent.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__,         \
                   __LINE__, #cond, gradcomm_last_error());                    \
      MPI_Abort(MPI_COMM_WORLD, 1);                                            \
    }                                                                          \
  } while (0)

/// The threads of this process (/proc/self/task's entries).
static int threadCount() {
  int count = 0;
  if (DIR *tasks = opendir("/proc/self/task")) {
    while (dirent *entry = readdir(tasks))
      count += entry->d_name[0] != '.';
    closedir(tasks);
  }
  return count;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  const bool withError = std::strcmp(mode, "error") == 0;
  const bool pumped = std::strcmp(mode, "pumped") == 0;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Barrier(MPI_COMM_WORLD);
  const int threadsBefore = threadCount();
  const float alpha = 0.9f / static_cast<float>(size);

  constexpr int64_t kCount = 4096;
  std::vector<float> gossip(kCount, 1.0f + rank), easgd(kCount, 2.0f + rank);
  gradcomm_status failed = GRADCOMM_OK;
  for (int step = 0; step < 5; ++step) {
    if (withError && step == 2 && rank == 1) {
      gossip[7] = NAN;
      easgd[7] = NAN;
    }
    gradcomm_status a =
        gradcomm_gossip_async_f32("exit.gossip", gossip.data(), kCount,
                                  GRADCOMM_SCHEDULE_RANDOM, 0.5f, 1, 1);
    gradcomm_status b = gradcomm_elastic_average_async_f32(
        "exit.easgd", easgd.data(), kCount, alpha, 1);
    if (!withError) {
      CHECK(a == GRADCOMM_OK);
      CHECK(b == GRADCOMM_OK);
    } else if (a != GRADCOMM_OK || b != GRADCOMM_OK) {
      failed = a != GRADCOMM_OK ? a : b;
    }
    // Every rank's puts land before the next call reads its mailbox.
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // Under the `error` policy a non-finite replica fails the asynchronous
  // op on every rank (written into every window), by the last step.
  if (withError)
    CHECK(failed == GRADCOMM_ERR_NON_FINITE);
  // The runtime's progress thread runs only where the trainer asked.
  const int threadsAdded = threadCount() - threadsBefore;
  if (threadsAdded != (pumped ? 1 : 0))
    std::fprintf(stderr, "rank %d: %d threads before the steps, %d after\n",
                 rank, threadsBefore, threadsBefore + threadsAdded);
  CHECK(threadsAdded == (pumped ? 1 : 0));
  if (pumped)
    CHECK(gradcomm_finalize() == GRADCOMM_OK);
  MPI_Finalize(); // without gradcomm_finalize, except "pumped"
  std::printf("rank %d: exited %s\n", rank,
              withError
                  ? "after the error"
                  : (pumped ? "cleanly with the progress thread" : "cleanly"));
  return 0;
}
