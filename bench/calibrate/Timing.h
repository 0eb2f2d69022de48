//===- Timing.h - Timing collectives across ranks ---------------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_BENCH_CALIBRATE_TIMING_H
#define GRADCOMM_BENCH_CALIBRATE_TIMING_H

#include <mpi.h>

#include <algorithm>
#include <vector>

namespace gradcomm::bench {

/// Median over `repetitions` of the slowest rank's time of `body`, after
/// one warm-up.
template <typename Body> double medianSeconds(int repetitions, Body body) {
  body();
  std::vector<double> samples;
  for (int r = 0; r < repetitions; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    body();
    double local = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    samples.push_back(slowest);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

} // namespace gradcomm::bench

#endif // GRADCOMM_BENCH_CALIBRATE_TIMING_H
