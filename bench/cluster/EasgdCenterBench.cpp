//===- EasgdCenterBench.cpp - Asynchronous EASGD: rank-0 vs sharded center ===//
//
// Part of the GradComm project.
//
// Under mpiexec: every rank calls the asynchronous elastic average on a
// replica of `count` floats `steps` times, once with the center on rank 0
// (gradcomm_elastic_average_async_f32) and once sharded over the ranks
// (gradcomm_elastic_average_sharded_f32), and prints, per placement, the
// median and the slowest rank's median time of one exchange, wall and CPU
// (this process, all threads). A benchmark, never a test (docs/gossip.md).
//
// Usage: mpiexec -n N gradcomm-easgd-center-bench [count, default 2500000]
//            [steps, default 10]
//
//===----------------------------------------------------------------------===//

#include "gradcomm/runtime.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void check(gradcomm_status status) {
  if (status != GRADCOMM_OK) {
    std::fprintf(stderr, "%s\n", gradcomm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

using ElasticAverageFn = gradcomm_status (*)(const char *, float *, int64_t,
                                             float, int64_t);

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  // The asynchronous ops' progress thread under this program's MPI: it
  // calls gradcomm_finalize before MPI_Finalize (docs/runtime.md, "The
  // finalize contract"). A value set by the user wins.
  setenv("GRADCOMM_ASYNC_PROGRESS", "1", /*overwrite=*/0);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t count = argc > 1 ? std::atoll(argv[1]) : 2500000;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  const float alpha = 0.9f / static_cast<float>(size);
  if (rank == 0)
    std::printf("ranks %d, %lld floats (%.1f MB), %d exchanges each\n", size,
                static_cast<long long>(count), 4e-6 * count, steps);
  struct Placement {
    const char *name;
    ElasticAverageFn fn;
  };
  for (Placement placement :
       {Placement{"rank0", gradcomm_elastic_average_async_f32},
        Placement{"sharded", gradcomm_elastic_average_sharded_f32}}) {
    std::vector<float> x(count);
    for (int64_t i = 0; i < count; ++i)
      x[i] = static_cast<float>((i * 7 + rank * 13) % 101) * 0.01f;
    const std::string state = std::string("bench_") + placement.name;
    check(placement.fn(state.c_str(), x.data(), count, alpha, 1)); // window
    MPI_Barrier(MPI_COMM_WORLD);
    std::vector<double> walls, cpus;
    for (int step = 0; step < steps; ++step) {
      const double wall = MPI_Wtime(), cpu = cpuSeconds();
      check(placement.fn(state.c_str(), x.data(), count, alpha, 1));
      walls.push_back(MPI_Wtime() - wall);
      cpus.push_back(cpuSeconds() - cpu);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double mine[2] = {median(walls), median(cpus)}, slowest[2] = {0, 0},
           sum[2] = {0, 0};
    MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("center %-8s exchange: mean of ranks' medians %.1f ms wall "
                  "%.1f ms cpu; slowest rank %.1f ms wall %.1f ms cpu\n",
                  placement.name, 1e3 * sum[0] / size, 1e3 * sum[1] / size,
                  1e3 * slowest[0], 1e3 * slowest[1]);
  }
  if (rank == 0)
    std::printf("done\n");
  check(gradcomm_finalize());
  MPI_Finalize();
  return 0;
}
