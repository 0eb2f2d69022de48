//===- Validate.cpp - The cost model against GradComm's own operations ----===//
//
// Part of the GradComm project.
//
// Under mpiexec: times the runtime's operations (dense all-reduce, ScaleCom
// with exact and chunk selection, local top-k, gossip) on gradients of the
// given sizes, and prints each beside the time lib/Analysis/CostModel
// predicts for it on the cluster a calibration file describes (written by
// gradcomm-calibrate on the same cluster). Local top-k also reports how
// many distinct indices the ranks chose (the build-up the simulator
// needs). The gradients are a shared component plus per-rank noise, so the
// ranks' top-k sets overlap as real gradients' do. A benchmark, never a
// test (docs/scaling.md).
//
// Usage: mpiexec -n N gradcomm-validate-model calibration-file
//            [sizes, default 1000000,25000000] [repetitions, default 5]
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"
#include "gradcomm/Analysis/CostModel.h"
#include "gradcomm/runtime.h"
#include "gradcomm/runtime_mpi.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace mlir::gradcomm;
using gradcomm::bench::gradient;
using gradcomm::bench::medianSeconds;

namespace {

constexpr int64_t kRatio = 100;

[[noreturn]] void fail(int rank, const std::string &message) {
  if (rank == 0)
    std::fprintf(stderr, "gradcomm-validate-model: %s\n", message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void check(int rank, gradcomm_status status, const char *what) {
  if (status != GRADCOMM_OK)
    fail(rank, std::string(what) + " failed with status " +
                   std::to_string(static_cast<int>(status)));
}

struct Case {
  std::string name;
  std::function<void()> run;
  Prediction predicted;
};

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // lines reach mpiexec as printed
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2)
    fail(rank, "usage: gradcomm-validate-model calibration-file [sizes] "
               "[repetitions]");
  ClusterSpec spec;
  spec.calibrationFile = argv[1];
  spec.ranks = size;
  llvm::Expected<ClusterModel> model = buildClusterModel(spec);
  if (!model)
    fail(rank, llvm::toString(model.takeError()));
  std::vector<int64_t> sizes = {1000000, 25000000};
  if (argc > 2) {
    sizes.clear();
    llvm::SmallVector<llvm::StringRef> items;
    llvm::StringRef(argv[2]).split(items, ',', -1, false);
    for (llvm::StringRef item : items) {
      int64_t count = 0;
      if (item.getAsInteger(10, count) || count < kRatio)
        fail(rank, "bad size '" + item.str() + "': an integer >= 100");
      sizes.push_back(count);
    }
  }
  int repetitions = argc > 3 ? std::atoi(argv[3]) : 5;
  if (repetitions < 1)
    fail(rank, "repetitions must be at least 1");
  check(rank, gradcomm_init_with_comm(MPI_COMM_WORLD), "gradcomm_init");

  if (rank == 0) {
    std::printf("ranks %d, latency %.2f us, link %.1f MB/s, memory %.1f MB/s "
                "(%s); median of %d, slowest rank\n",
                size, model->latencySeconds * 1e6,
                model->linkBytesPerSecond / 1e6,
                model->memoryBytesPerSecond / 1e6, argv[1], repetitions);
    std::printf("%12s %-18s %12s %13s %10s\n", "elements", "operation",
                "measured_ms", "predicted_ms", "pred/meas");
  }
  for (int64_t count : sizes) {
    std::vector<float> grad = gradient(count, rank), out(count), x = grad;
    const int64_t k = (count + kRatio - 1) / kRatio;
    int64_t unionSize = 0;
    const std::string tag = std::to_string(count);
    for (const char *state : {"exact", "chunk", "topk"})
      check(rank, gradcomm_state_declare((tag + state).c_str(), count),
            "gradcomm_state_declare");
    check(rank, gradcomm_state_declare((tag + "gossip").c_str(), 0),
          "gradcomm_state_declare");
    std::vector<Case> cases = {
        {"dense",
         [&] {
           check(rank,
                 gradcomm_dense_all_reduce_f32("dense", out.data(), count,
                                               GRADCOMM_REDUCE_AVERAGE),
                 "dense");
         },
         predictDense(*model, count)},
        {"scalecom-r100-exact",
         [&] {
           check(rank,
                 gradcomm_scalecom_f32(
                     (tag + "exact").c_str(), grad.data(), out.data(), count, k,
                     GRADCOMM_SELECT_EXACT, 0, 1.0f, GRADCOMM_REDUCE_AVERAGE),
                 "scalecom exact");
         },
         predictScaleCom(*model, count, kRatio, /*exactSelection=*/true)},
        {"scalecom-r100-chunk",
         [&] {
           check(rank,
                 gradcomm_scalecom_f32((tag + "chunk").c_str(), grad.data(),
                                       out.data(), count, k,
                                       GRADCOMM_SELECT_CHUNK, kRatio, 1.0f,
                                       GRADCOMM_REDUCE_AVERAGE),
                 "scalecom chunk");
         },
         predictScaleCom(*model, count, kRatio)},
        {"local-topk-r100",
         [&] {
           check(rank,
                 gradcomm_local_topk_all_gather_f32(
                     (tag + "topk").c_str(), grad.data(), out.data(), count, k,
                     GRADCOMM_REDUCE_AVERAGE, &unionSize),
                 "local top-k");
         },
         predictLocalTopk(*model, count, kRatio)},
        {"gossip",
         [&] {
           check(rank,
                 gradcomm_gossip_exchange_f32(
                     (tag + "gossip").c_str(), x.data(), count,
                     GRADCOMM_SCHEDULE_MATCHING, 0.5f, 0, 1),
                 "gossip");
         },
         predictGossip(*model, count)},
    };
    for (Case &c : cases) {
      const double measured = medianSeconds(repetitions, c.run);
      if (rank == 0)
        std::printf("%12lld %-18s %12.3f %13.3f %10.2f\n",
                    static_cast<long long>(count), c.name.c_str(),
                    measured * 1e3, c.predicted.seconds * 1e3,
                    c.predicted.seconds / measured);
    }
    if (rank == 0)
      std::printf("%12lld local top-k: %lld distinct indices over %d ranks "
                  "of k = %lld (%.2f k; n k = %lld)\n",
                  static_cast<long long>(count),
                  static_cast<long long>(unionSize), size,
                  static_cast<long long>(k), static_cast<double>(unionSize) / k,
                  static_cast<long long>(size * k));
  }
  if (rank == 0)
    std::printf("done\n");
  gradcomm_finalize();
  MPI_Finalize();
  return 0;
}
