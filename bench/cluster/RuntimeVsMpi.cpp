//===- RuntimeVsMpi.cpp - GradComm's operations against raw MPI ----------===//
//
// Part of the GradComm project.
//
// Under mpiexec (shared memory, or bench/cluster/netns.sh's emulated
// cluster): for each gradient size, times in one run
//   raw-allreduce     MPI_Allreduce in place (the baseline),
//   floor-allreduce   plain code doing what the default non-finite policy
//                     needs: a scan, a one-word agreement, MPI_Allreduce,
//   dense             gradcomm_dense_all_reduce_f32 (agreement on),
//   dense-nocheck     the same with the consistency check off,
//   scalecom-r100 / -r1000   gradcomm_scalecom_f32, exact selection,
//   raw-sendrecv      MPI_Sendrecv of the buffer with the gossip peer,
//   floor-gossip      the scan, the agreement, MPI_Sendrecv and the mix,
//   gossip            gradcomm_gossip_exchange_f32 (matching schedule),
// and prints each one's median wall time per call (the slowest rank's; a
// sample is 4M / size calls in a row, at least one), its CPU
// time (process CPU seconds per call, the mean over ranks) and its ratio
// to its raw baseline; dense and gossip also their ratio to the floor:
// what the runtime costs beyond the passes its contract needs. The small
// tensors' lines do the same for 100 tensors of 10,000 elements in a row:
// one call each, every call started before the first wait, one batched
// call (dense), and gossip and ScaleCom blocking against started (all
// ratios to raw MPI_Allreduce per tensor). Bytes: the runtime's counters
// per call, and, when GRADCOMM_BENCH_IFACE names a network interface (eth0
// in a namespace), that interface's transmitted bytes per call, both
// summed over the ranks. A benchmark, never a test (docs/performance.md).
//
// Usage: mpiexec -n N gradcomm-runtime-vs-mpi [sizes, default
//            65536,1000000,25000000] [repetitions, default 5]
//            [small tensors, default 100x10000]
//
//===----------------------------------------------------------------------===//

#include "../calibrate/BenchSupport.h"
#include "Kernels.h"
#include "gradcomm/runtime.h"
#include "gradcomm/runtime_mpi.h"

#include <mpi.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

using gradcomm::bench::gradient;
using gradcomm::bench::medianSeconds;

namespace {

int worldRank = 0, worldSize = 1;

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "gradcomm-runtime-vs-mpi: rank %d: %s\n", worldRank,
               message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void check(gradcomm_status status, const char *what) {
  if (status != GRADCOMM_OK)
    fail(std::string(what) + ": " + gradcomm_last_error());
}

double cpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * now.tv_nsec;
}

/// Transmitted bytes of GRADCOMM_BENCH_IFACE (0 when unset or unreadable).
uint64_t interfaceBytes() {
  const char *name = std::getenv("GRADCOMM_BENCH_IFACE");
  if (!name || !*name)
    return 0;
  std::ifstream file(std::string("/sys/class/net/") + name +
                     "/statistics/tx_bytes");
  uint64_t bytes = 0;
  file >> bytes;
  return bytes;
}

struct Timing {
  double wall = 0;      // median seconds per call, slowest rank
  double cpu = 0;       // CPU seconds per call, mean over ranks
  double counted = 0;   // runtime counters' bytes sent per call, rank 0
  double interface = 0; // interface bytes sent per call, rank 0
};

/// Times `body` (calls = how many calls one run makes, for the per-call
/// figures); `opNames`: the counters to read.
Timing measure(int repetitions, int calls, const std::vector<std::string> &ops,
               const std::function<void()> &body) {
  check(gradcomm_stats_reset(), "stats_reset");
  uint64_t interfaceBefore = interfaceBytes();
  double cpuBefore = cpuSeconds();
  Timing timing;
  timing.wall = medianSeconds(repetitions, body) / calls;
  double cpu = (cpuSeconds() - cpuBefore) / ((repetitions + 1) * calls);
  MPI_Allreduce(&cpu, &timing.cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  timing.cpu /= worldSize;
  // medianSeconds runs the body once more to warm up.
  const double runs = static_cast<double>(repetitions + 1) * calls;
  // Both summed over the ranks: a broadcast's root sends more than the
  // others, and the counters hold the per-rank mean of the cost model.
  double sent[2] = {(interfaceBytes() - interfaceBefore) / runs, 0};
  for (const std::string &op : ops) {
    gradcomm_op_stats stats{};
    check(gradcomm_stats_get(op.c_str(), &stats), "stats_get");
    sent[1] += (stats.value_bytes_sent + stats.index_bytes_sent) / runs;
  }
  double total[2] = {0, 0};
  MPI_Allreduce(sent, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  timing.interface = total[0];
  timing.counted = total[1];
  return timing;
}

/// `floor`, when given, adds the ratio to it (the floor rows).
void report(const char *size, const char *name, const Timing &timing,
            const Timing &baseline, const Timing *floor = nullptr) {
  if (worldRank != 0)
    return;
  std::printf("%-10s %-16s wall %10.3f ms  cpu %10.3f ms  ratio %6.3f  "
              "counted %12.0f B  interface %12.0f B",
              size, name, 1e3 * timing.wall, 1e3 * timing.cpu,
              timing.wall / baseline.wall, timing.counted, timing.interface);
  if (floor)
    std::printf("  floor ratio %6.3f", timing.wall / floor->wall);
  std::printf("\n");
  std::fflush(stdout);
}

/// The non-finite scan a plain program needs before it may change anything:
/// one read of the buffer with the runtime's own kernel (the largest |x| as
/// IEEE bits), then a one-word agreement on every rank's verdict. Fails on a
/// non-finite value (the benchmark's gradients are finite).
void scanAndAgree(const std::vector<float> &data) {
  const uint32_t largest =
      gradcomm::cpu::maxMagnitudeKey(data.data(), data.size());
  int finite = gradcomm::cpu::exceedsLimit(largest, FLT_MAX) ? 0 : 1;
  int everywhere = 0;
  MPI_Allreduce(&finite, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!everywhere)
    fail("a non-finite gradient in the floor row");
}

void runSize(int64_t count, int repetitions) {
  const std::string label = std::to_string(count);
  const char *size = label.c_str();
  std::vector<float> grad = gradient(count, worldRank), data(count), out(count);
  auto refill = [&] { data = grad; };
  // A sample times several calls in a row below 4M elements (64 at 64K):
  // the median of single 60 us calls measured the scheduler more than the
  // call (1.13-1.24x the floor at 64K, against 1.01-1.02x over 4000 calls).
  const int calls = static_cast<int>(
      std::max<int64_t>(1, (int64_t(1) << 22) / std::max<int64_t>(count, 1)));
  auto sampled = [&](const std::vector<std::string> &ops,
                     const std::function<void()> &call) {
    return measure(repetitions, calls, ops, [&] {
      for (int c = 0; c < calls; ++c)
        call();
    });
  };

  Timing raw = sampled({}, [&] {
    refill();
    MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(count), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
  });
  report(size, "raw-allreduce", raw, raw);
  // Op and state names are per size: a state keeps its size.
  auto dense = [&](const std::string &base) {
    const std::string name = base + "-" + label;
    return sampled({name}, [&] {
      refill();
      check(gradcomm_dense_all_reduce_f32(name.c_str(), data.data(), count,
                                          GRADCOMM_REDUCE_SUM),
            name.c_str());
    });
  };
  Timing floor = sampled({}, [&] {
    refill();
    scanAndAgree(data);
    MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(count), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
  });
  report(size, "floor-allreduce", floor, raw);
  report(size, "dense", dense("dense"), raw, &floor);
  check(gradcomm_set_consistency_check(0), "set_consistency_check");
  report(size, "dense-nocheck", dense("dense-nocheck"), raw);
  check(gradcomm_set_consistency_check(1), "set_consistency_check");
  for (int64_t ratio : {100, 1000}) {
    if (count / ratio < 1)
      continue;
    const std::string name = "scalecom-r" + std::to_string(ratio) + "-" + label;
    Timing timing = sampled({name}, [&] {
      check(gradcomm_scalecom_f32(name.c_str(), grad.data(), out.data(), count,
                                  count / ratio, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                  GRADCOMM_REDUCE_AVERAGE),
            name.c_str());
    });
    report(size, ("scalecom-r" + std::to_string(ratio)).c_str(), timing, raw);
  }

  // Gossip against a raw exchange with the same peers (matching schedule,
  // one step per call).
  if (worldSize < 2)
    return;
  std::vector<float> received(count);
  // The raw exchange, and the floor: the scan, the agreement, the exchange
  // and the mix.
  auto exchange = [&](bool asFloor) {
    uint64_t step = 0;
    return sampled({}, [&] {
      int peer = -1;
      check(gradcomm_gossip_peer(GRADCOMM_SCHEDULE_MATCHING, 0, step++,
                                 worldRank, worldSize, &peer),
            "gossip_peer");
      refill();
      if (asFloor)
        scanAndAgree(data);
      if (peer < 0)
        return;
      MPI_Sendrecv(data.data(), static_cast<int>(count), MPI_FLOAT, peer, 7,
                   received.data(), static_cast<int>(count), MPI_FLOAT, peer, 7,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (asFloor)
        gradcomm::cpu::mix(data.data(), received.data(), count, 0.5f);
    });
  };
  Timing sendrecv = exchange(false);
  report(size, "raw-sendrecv", sendrecv, sendrecv);
  Timing gossipFloor = exchange(true);
  report(size, "floor-gossip", gossipFloor, sendrecv);
  const std::string gossipName = "gossip-" + label;
  Timing gossip = sampled({gossipName}, [&] {
    refill();
    check(gradcomm_gossip_exchange_f32(gossipName.c_str(), data.data(), count,
                                       GRADCOMM_SCHEDULE_MATCHING, 0.5f, 0, 1),
          "gossip");
  });
  report(size, "gossip", gossip, sendrecv, &gossipFloor);
}

/// Many small tensors (default 100 of 10,000 elements), one call each:
/// latency, not bandwidth.
void runSmallTensors(int repetitions, int kTensors, int64_t kCount) {
  const std::string small =
      std::to_string(kTensors) + "x" + std::to_string(kCount);
  std::vector<std::vector<float>> data(kTensors, gradient(kCount, worldRank));
  std::vector<std::string> names;
  for (int t = 0; t < kTensors; ++t)
    names.push_back("small" + std::to_string(t));
  Timing raw = measure(repetitions, kTensors, {}, [&] {
    for (auto &tensor : data)
      MPI_Allreduce(MPI_IN_PLACE, tensor.data(), kCount, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
  });
  report(small.c_str(), "raw-allreduce", raw, raw);
  for (int checked : {1, 0}) {
    check(gradcomm_set_consistency_check(checked), "set_consistency_check");
    Timing dense = measure(repetitions, kTensors, names, [&] {
      for (int t = 0; t < kTensors; ++t)
        check(gradcomm_dense_all_reduce_f32(names[t].c_str(), data[t].data(),
                                            kCount, GRADCOMM_REDUCE_SUM),
              "small dense");
    });
    report(small.c_str(), checked ? "dense" : "dense-nocheck", dense, raw);
  }
  check(gradcomm_set_consistency_check(1), "set_consistency_check");
  // Every tensor started before the first wait.
  std::vector<gradcomm_request> requests(kTensors);
  Timing started = measure(repetitions, kTensors, names, [&] {
    for (int t = 0; t < kTensors; ++t)
      check(gradcomm_dense_all_reduce_start_f32(
                names[t].c_str(), data[t].data(), kCount, GRADCOMM_REDUCE_SUM,
                &requests[t]),
            "small dense start");
    for (auto &request : requests)
      check(gradcomm_wait(&request), "small dense wait");
  });
  report(small.c_str(), "dense-started", started, raw);
  // One batched call (run-time buckets of 64K elements).
  std::vector<float *> pointers;
  for (auto &tensor : data)
    pointers.push_back(tensor.data());
  std::vector<int64_t> counts(kTensors, kCount);
  Timing many = measure(repetitions, kTensors, {"small-many"}, [&] {
    check(gradcomm_dense_all_reduce_many_f32("small-many", pointers.data(),
                                             counts.data(), kTensors,
                                             GRADCOMM_REDUCE_SUM),
          "small many");
  });
  report(small.c_str(), "dense-many", many, raw);
  if (worldSize < 2)
    return;
  // Gossip and ScaleCom per tensor: blocking against every tensor started
  // first (ScaleCom: the next tensor's selection while this one's values
  // are reduced).
  auto perTensor =
      [&](const char *label, bool start,
          const std::function<gradcomm_status(int, gradcomm_request *)> &call) {
        Timing timing = measure(repetitions, kTensors, {}, [&] {
          for (int t = 0; t < kTensors; ++t)
            check(call(t, start ? &requests[t] : nullptr), label);
          if (start)
            for (auto &request : requests)
              check(gradcomm_wait(&request), label);
        });
        report(small.c_str(), label, timing, raw);
      };
  for (bool start : {false, true}) {
    perTensor(start ? "gossip-started" : "gossip", start,
              [&](int t, gradcomm_request *request) {
                const std::string name = "gossip-" + names[t];
                return request ? gradcomm_gossip_exchange_start_f32(
                                     name.c_str(), data[t].data(), kCount,
                                     GRADCOMM_SCHEDULE_MATCHING, 0.5f, 0, 1,
                                     request)
                               : gradcomm_gossip_exchange_f32(
                                     name.c_str(), data[t].data(), kCount,
                                     GRADCOMM_SCHEDULE_MATCHING, 0.5f, 0, 1);
              });
  }
  std::vector<std::vector<float>> out(kTensors, std::vector<float>(kCount));
  for (bool start : {false, true}) {
    perTensor(start ? "scalecom-started" : "scalecom", start,
              [&](int t, gradcomm_request *request) {
                const std::string name =
                    (request ? "scalecom-s-" : "scalecom-b-") + names[t];
                return request
                           ? gradcomm_scalecom_start_f32(
                                 name.c_str(), data[t].data(), out[t].data(),
                                 kCount, kCount / 100, GRADCOMM_SELECT_EXACT, 0,
                                 1.0f, GRADCOMM_REDUCE_AVERAGE, request)
                           : gradcomm_scalecom_f32(
                                 name.c_str(), data[t].data(), out[t].data(),
                                 kCount, kCount / 100, GRADCOMM_SELECT_EXACT, 0,
                                 1.0f, GRADCOMM_REDUCE_AVERAGE);
              });
  }
}

std::vector<int64_t> parseSizes(const char *text) {
  std::vector<int64_t> sizes;
  std::string list(text);
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    std::string item = list.substr(begin, end - begin);
    char *stop = nullptr;
    long long value = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || value < 1 || value > (1ll << 30))
      fail("sizes are a comma-separated list of 1..2^30, got '" + list + "'");
    sizes.push_back(value);
    if (end == std::string::npos)
      break;
    begin = end + 1;
  }
  return sizes;
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  check(gradcomm_init_with_comm(MPI_COMM_WORLD), "init_with_comm");
  std::vector<int64_t> sizes =
      parseSizes(argc > 1 ? argv[1] : "65536,1000000,25000000");
  int repetitions = argc > 2 ? std::atoi(argv[2]) : 5;
  if (repetitions < 1)
    fail("repetitions must be >= 1");
  if (worldRank == 0)
    std::printf("gradcomm-runtime-vs-mpi: %d ranks, %d repetitions "
                "(ratio: wall time over the raw MPI call's)\n",
                worldSize, repetitions);
  for (int64_t count : sizes)
    runSize(count, repetitions);
  int tensors = 100;
  long long count = 10000;
  if (argc > 3 &&
      (std::sscanf(argv[3], "%dx%lld", &tensors, &count) != 2 || tensors < 1 ||
       tensors > 100000 || count < 1 || count > (1ll << 24)))
    fail(std::string("small tensors are TENSORSxCOUNT, e.g. 100x10000; got "
                     "'") +
         argv[3] + "'");
  runSmallTensors(repetitions, tensors, count);
  if (worldRank == 0)
    std::printf("done\n");
  std::fflush(stdout);
  check(gradcomm_finalize(), "finalize");
  MPI_Finalize();
  return 0;
}
