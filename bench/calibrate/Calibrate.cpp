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

#include "BenchSupport.h"
#include "gradcomm/Analysis/CostModel.h"
#include "gradcomm/runtime.h"
#include "gradcomm/runtime_mpi.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace mlir::gradcomm;
using gradcomm::bench::medianSeconds;

namespace {

/// Median of 5 (after a warm-up) of `body`'s time on this rank alone.
template <typename Body> double localSeconds(Body body) {
  body();
  std::vector<double> samples;
  for (int r = 0; r < 5; ++r) {
    double start = MPI_Wtime();
    body();
    samples.push_back(MPI_Wtime() - start);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// The runtime's ScaleCom (chunk and exact, ratio 100) and local top-k on
/// one rank, per element.
void timeKernels(ClusterModel &model) {
  if (gradcomm_init_with_comm(MPI_COMM_SELF) != GRADCOMM_OK) {
    std::fprintf(stderr, "gradcomm-calibrate: %s\n", gradcomm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int64_t count = int64_t(1) << 24, k = (count + 99) / 100;
  std::vector<float> grad = gradcomm::bench::gradient(count, 0), out(count);
  auto check = [](gradcomm_status status) {
    if (status != GRADCOMM_OK) {
      std::fprintf(stderr, "gradcomm-calibrate: %s\n", gradcomm_last_error());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  };
  auto scalecom = [&](const char *state, gradcomm_selection selection) {
    return localSeconds([&] {
      check(gradcomm_scalecom_f32(state, grad.data(), out.data(), count, k,
                                  selection,
                                  selection == GRADCOMM_SELECT_CHUNK ? 100 : 0,
                                  1.0f, GRADCOMM_REDUCE_AVERAGE));
    });
  };
  const double perElement = 1.0 / static_cast<double>(count);
  model.kernelSecondsPerElement.scalecomChunk =
      scalecom("calibrate_chunk", GRADCOMM_SELECT_CHUNK) * perElement;
  model.kernelSecondsPerElement.scalecomExact =
      scalecom("calibrate_exact", GRADCOMM_SELECT_EXACT) * perElement;
  model.kernelSecondsPerElement.localTopk =
      localSeconds([&] {
        check(gradcomm_local_topk_all_gather_f32(
            "calibrate_topk", grad.data(), out.data(), count, k,
            GRADCOMM_REDUCE_AVERAGE, nullptr));
      }) *
      perElement;
  gradcomm_finalize();
}

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

  // The runtime's local work per element, timed on rank 0 alone (the
  // runtime on MPI_COMM_SELF: no peer to wait for) at 16M elements, the
  // median of 5 after a warm-up: what a call costs besides its messages.
  if (rank == 0)
    timeKernels(model);
  MPI_Barrier(MPI_COMM_WORLD);

  if (rank == 0) {
    char text[1024];
    const ClusterModel::KernelTimes &kernels = model.kernelSecondsPerElement;
    std::snprintf(text, sizeof(text),
                  "# gradcomm-calibrate: mpiexec -n %d\n"
                  "ranks = %d\nlatency = %.3fus\nbandwidth = %.1fMB/s\n"
                  "memory_bandwidth = %.1fMB/s\n"
                  "kernel_scalecom_chunk = %.4fns\n"
                  "kernel_scalecom_exact = %.4fns\n"
                  "kernel_local_topk = %.4fns\n",
                  size, size, model.latencySeconds * 1e6,
                  model.linkBytesPerSecond / 1e6,
                  model.memoryBytesPerSecond / 1e6, kernels.scalecomChunk * 1e9,
                  kernels.scalecomExact * 1e9, kernels.localTopk * 1e9);
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
