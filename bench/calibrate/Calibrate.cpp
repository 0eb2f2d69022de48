//===- Calibrate.cpp - Measure a cluster for gradcomm-plan ----------------===//
//
// Part of the GradComm project.
//
// Under mpiexec: measures the per-message latency and the link bandwidth
// (ping-pong between ranks 0 and 1), the memory bandwidth of one rank
// (memcpy of 256 MiB), writes them as a gradcomm-plan calibration file, and
// then checks the cost model against MPI_Allreduce and MPI_Bcast measured
// at several sizes on all ranks: predicted / measured per size
// (docs/scaling.md). A benchmark, never a test.
//
// Usage: mpiexec -n N gradcomm-calibrate [calibration-file]
//
//===----------------------------------------------------------------------===//

#include "Timing.h"
#include "gradcomm/Analysis/CostModel.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace mlir::gradcomm;
using gradcomm::bench::medianSeconds;

namespace {

/// One-way time of a `bytes` message between ranks 0 and 1 (half a
/// round trip); the other ranks wait.
double oneWaySeconds(int rank, std::vector<char> &buffer, int bytes) {
  const int trips = 20;
  return medianSeconds(5,
                       [&] {
                         for (int t = 0; t < trips; ++t) {
                           if (rank == 0) {
                             MPI_Send(buffer.data(), bytes, MPI_BYTE, 1, 0,
                                      MPI_COMM_WORLD);
                             MPI_Recv(buffer.data(), bytes, MPI_BYTE, 1, 0,
                                      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                           } else if (rank == 1) {
                             MPI_Recv(buffer.data(), bytes, MPI_BYTE, 0, 0,
                                      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                             MPI_Send(buffer.data(), bytes, MPI_BYTE, 0, 0,
                                      MPI_COMM_WORLD);
                           }
                         }
                       }) /
         (2.0 * trips);
}

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // lines reach mpiexec as printed
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0)
      std::fprintf(stderr, "gradcomm-calibrate: run it with at least 2 "
                           "ranks (mpiexec -n 2 or more)\n");
    MPI_Finalize();
    return 2;
  }

  // Latency from 8-byte messages, bandwidth from the slope between 1 MiB
  // and 16 MiB.
  std::vector<char> message(16 << 20, 1);
  const double small = oneWaySeconds(rank, message, 8);
  const double mid = oneWaySeconds(rank, message, 1 << 20);
  const double large = oneWaySeconds(rank, message, 16 << 20);
  ClusterModel model;
  model.ranks = size;
  model.latencySeconds = small;
  model.linkBytesPerSecond = double((16 << 20) - (1 << 20)) / (large - mid);

  // Memory bandwidth: a 256 MiB copy moves 512 MiB.
  std::vector<char> from(256 << 20, 2), to(256 << 20, 0);
  const double copy = medianSeconds(
      3, [&] { std::memcpy(to.data(), from.data(), from.size()); });
  model.memoryBytesPerSecond = 2.0 * from.size() / copy;

  if (rank == 0) {
    char text[512];
    std::snprintf(text, sizeof(text),
                  "# gradcomm-calibrate: mpiexec -n %d\n"
                  "ranks = %d\nlatency = %.3fus\nbandwidth = %.1fMB/s\n"
                  "memory_bandwidth = %.1fMB/s\n",
                  size, size, model.latencySeconds * 1e6,
                  model.linkBytesPerSecond / 1e6,
                  model.memoryBytesPerSecond / 1e6);
    std::fputs(text, stdout);
    if (argc > 1) {
      FILE *file = std::fopen(argv[1], "w");
      if (!file || std::fputs(text, file) < 0 || std::fclose(file) != 0) {
        std::fprintf(stderr, "gradcomm-calibrate: cannot write %s\n", argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    std::printf("%-10s %12s %14s %14s %10s\n", "collective", "bytes",
                "measured_us", "predicted_us", "pred/meas");
  }

  // The model against measurement, every rank taking part.
  std::vector<float> data(16 << 20, 1.0f), result(16 << 20);
  for (int bytes : {1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26}) {
    const int count = bytes / 4;
    const double reduce = medianSeconds(7, [&] {
      MPI_Allreduce(data.data(), result.data(), count, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    });
    const double broadcast = medianSeconds(7, [&] {
      MPI_Bcast(data.data(), count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    });
    if (rank == 0) {
      const double predictedReduce = allReduceSeconds(model, bytes);
      const double predictedBroadcast = broadcastSeconds(model, bytes);
      std::printf("%-10s %12d %14.1f %14.1f %10.2f\n", "allreduce", bytes,
                  reduce * 1e6, predictedReduce * 1e6,
                  predictedReduce / reduce);
      std::printf("%-10s %12d %14.1f %14.1f %10.2f\n", "bcast", bytes,
                  broadcast * 1e6, predictedBroadcast * 1e6,
                  predictedBroadcast / broadcast);
    }
  }
  MPI_Finalize();
  return 0;
}
