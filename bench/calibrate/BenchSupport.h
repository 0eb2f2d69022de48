//===- BenchSupport.h - Timing and inputs of the calibration benches -*- C++
//-*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_BENCH_CALIBRATE_BENCHSUPPORT_H
#define GRADCOMM_BENCH_CALIBRATE_BENCHSUPPORT_H

#include <mpi.h>

#include <algorithm>
#include <cstdint>
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

/// A gradient for rank `rank`: a component shared by every rank plus this
/// rank's noise (xorshift), so the ranks' top-k sets overlap as real
/// gradients' do. The same values on every run.
inline std::vector<float> gradient(int64_t count, int rank) {
  std::vector<float> values(count);
  uint64_t shared = 0x9e3779b97f4a7c15ull,
           own = shared ^ static_cast<uint64_t>(rank + 1) * 7919;
  auto next = [](uint64_t &x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return static_cast<float>(static_cast<int64_t>(x >> 40) - (1 << 23)) /
           static_cast<float>(1 << 23);
  };
  for (int64_t i = 0; i < count; ++i)
    values[i] = next(shared) + 0.5f * next(own);
  return values;
}

} // namespace gradcomm::bench

#endif // GRADCOMM_BENCH_CALIBRATE_BENCHSUPPORT_H
