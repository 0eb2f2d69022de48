//===- TransportTest.cpp - Every op over a transport that is not MPI ------===//
//
// Part of the GradComm project.
//
// The runtime's ops reach other ranks only through Transport.h. This test
// binds the runtime to the transport double (TransportDouble.h: forked
// processes, shared memory, no MPI initialized at all) and runs every
// collective op: dense (blocking, started, 16-bit wire, batched), ScaleCom
// (blocking, started, chunk selection), the dense and the compressed
// reduce-scatter, local top-k, gossip (blocking and
// started, float32 and 16-bit wires), synchronous EASGD (both wires),
// the consensus distance, the agreement's
// refusals (a mismatch, one rank's bad argument, a non-finite input),
// checkpoints and the counters' dump. Results are checked against
// references computed here, and written to one file per rank:
//
//   gradcomm-runtime-transport-test double N DIR   N forked ranks, the double
//   mpiexec -n N gradcomm-runtime-transport-test mpi DIR   the same over MPI
//
// transport-double.sh runs both at 2 ranks and compares the files byte for
// byte: swapping the transport changes no bit. The asynchronous ops (the
// windows) run over both and are checked by what holds however the ranks
// interleave (checkAsynchronous), outside the compared bytes. Over the
// double groups, and over a double made without windows the asynchronous
// ops, must fail with a message naming the transport, and every kind of
// transfer must have been used:
//
//   gradcomm-runtime-transport-test double-without-windows N DIR
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "ScaleComReference.h"
#include "TransportDouble.h"
#include "gradcomm/runtime.h"

#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

int failures = 0;

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      std::fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n",       \
                   __FILE__, __LINE__, #condition, gradcomm_last_error());     \
      ++failures;                                                              \
    }                                                                          \
  } while (false)

#define CHECK_OK(call) CHECK((call) == GRADCOMM_OK)

/// This rank's results, in call order, as raw bytes.
class Results {
public:
  explicit Results(const std::string &path) : file(path, std::ios::binary) {}
  template <typename T> void add(const std::vector<T> &values) {
    file.write(reinterpret_cast<const char *>(values.data()),
               sizeof(T) * values.size());
  }
  void add(double value) {
    file.write(reinterpret_cast<const char *>(&value), sizeof(value));
  }

private:
  std::ofstream file;
};

/// Rank r's gradient at step s: values of mixed signs and magnitudes, so
/// sums round and the selection depends on the rank.
std::vector<float> gradientOf(int rank, int step, int64_t count) {
  std::vector<float> grad(count);
  for (int64_t i = 0; i < count; ++i)
    grad[i] = std::sin(0.37f * static_cast<float>(i + 1) *
                           static_cast<float>(rank + 2) +
                       static_cast<float>(step)) *
              (1.0f + 0.01f * static_cast<float>((i * 7 + rank) % 13));
  return grad;
}

/// The sum over the ranks in rank order (the double's order; at 2 ranks
/// any order gives these bits).
std::vector<float> sumOverRanks(int size, int step, int64_t count) {
  std::vector<float> sum = gradientOf(0, step, count);
  for (int r = 1; r < size; ++r) {
    std::vector<float> grad = gradientOf(r, step, count);
    for (int64_t i = 0; i < count; ++i)
      sum[i] += grad[i];
  }
  return sum;
}

void checkDense(int rank, int size, Results &results) {
  constexpr int64_t kCount = 5000;
  std::vector<float> data = gradientOf(rank, 0, kCount);
  CHECK_OK(gradcomm_dense_all_reduce_f32("dense", data.data(), kCount,
                                         GRADCOMM_REDUCE_SUM));
  CHECK(data == sumOverRanks(size, 0, kCount));
  results.add(data);

  std::vector<float> started = gradientOf(rank, 1, kCount);
  gradcomm_request request = nullptr;
  CHECK_OK(gradcomm_dense_all_reduce_start_f32("dense.started", started.data(),
                                               kCount, GRADCOMM_REDUCE_AVERAGE,
                                               &request));
  CHECK_OK(gradcomm_wait(&request));
  std::vector<float> mean = sumOverRanks(size, 1, kCount);
  for (float &value : mean)
    value /= static_cast<float>(size);
  CHECK(started == mean);
  results.add(started);

  std::vector<float> wire = gradientOf(rank, 2, kCount);
  CHECK_OK(gradcomm_dense_all_reduce_wire_f32("dense.bf16", wire.data(), kCount,
                                              GRADCOMM_WIRE_BF16,
                                              GRADCOMM_REDUCE_SUM));
  results.add(wire);

  // The batch: a small tensor packed into a bucket, a large one in place.
  std::vector<float> small = gradientOf(rank, 3, 10);
  std::vector<float> large = gradientOf(rank, 4, 70000);
  float *tensors[] = {small.data(), large.data()};
  const int64_t counts[] = {10, 70000};
  CHECK_OK(gradcomm_dense_all_reduce_many_f32("dense.many", tensors, counts, 2,
                                              GRADCOMM_REDUCE_SUM));
  CHECK(small == sumOverRanks(size, 3, 10));
  CHECK(large == sumOverRanks(size, 4, 70000));
  results.add(small);
  results.add(large);
}

void checkScalecom(int rank, int size, Results &results) {
  // k = 100 of 1000: the indices (400 bytes) do not fit the agreement's
  // payload and travel in a broadcast of their own.
  constexpr int64_t kCount = 1000, kTop = 100;
  gradcomm::test::Reference reference(size, kCount, kTop, GRADCOMM_SELECT_EXACT,
                                      0, 0.9f, GRADCOMM_REDUCE_AVERAGE);
  for (int step = 0; step < 4; ++step) {
    std::vector<std::vector<float>> grads;
    for (int r = 0; r < size; ++r)
      grads.push_back(gradientOf(r, step, kCount));
    std::vector<float> expected = reference.run(grads);
    std::vector<float> out(kCount, -1.0f);
    if (step < 3) {
      CHECK_OK(gradcomm_scalecom_f32("scalecom", grads[rank].data(), out.data(),
                                     kCount, kTop, GRADCOMM_SELECT_EXACT, 0,
                                     0.9f, GRADCOMM_REDUCE_AVERAGE));
    } else {
      gradcomm_request request = nullptr;
      CHECK_OK(gradcomm_scalecom_start_f32(
          "scalecom", grads[rank].data(), out.data(), kCount, kTop,
          GRADCOMM_SELECT_EXACT, 0, 0.9f, GRADCOMM_REDUCE_AVERAGE, &request));
      CHECK_OK(gradcomm_wait(&request));
    }
    CHECK(out == expected);
    results.add(out);
  }
  std::vector<float> memory(kCount);
  CHECK_OK(gradcomm_state_read("scalecom", memory.data(), kCount));
  CHECK(memory == reference.memory[rank]);

  // Chunk selection: 8 indices of one byte each, inside the agreement.
  gradcomm::test::Reference chunked(size, 800, 8, GRADCOMM_SELECT_CHUNK, 100,
                                    1.0f, GRADCOMM_REDUCE_SUM);
  std::vector<std::vector<float>> grads;
  for (int r = 0; r < size; ++r)
    grads.push_back(gradientOf(r, 7, 800));
  std::vector<float> out(800);
  CHECK_OK(gradcomm_scalecom_f32("scalecom.chunk", grads[rank].data(),
                                 out.data(), 800, 8, GRADCOMM_SELECT_CHUNK, 100,
                                 1.0f, GRADCOMM_REDUCE_SUM));
  CHECK(out == chunked.run(grads));
  results.add(out);
}

void checkReduceScatter(int rank, int size, Results &results) {
  constexpr int64_t kCount = 1001, kTop = 60;
  int64_t begin = 0, length = 0;
  CHECK_OK(gradcomm_shard_range(kCount, rank, size, &begin, &length));
  std::vector<float> data = gradientOf(rank, 0, kCount), shard(length);
  CHECK_OK(gradcomm_reduce_scatter_f32("rs", data.data(), shard.data(), kCount,
                                       GRADCOMM_REDUCE_SUM));
  const std::vector<float> sum = sumOverRanks(size, 0, kCount);
  CHECK(shard ==
        std::vector<float>(sum.begin() + begin, sum.begin() + begin + length));
  results.add(shard);

  gradcomm::test::Reference reference(size, kCount, kTop, GRADCOMM_SELECT_EXACT,
                                      0, 0.5f, GRADCOMM_REDUCE_AVERAGE);
  for (int step = 0; step < 3; ++step) {
    std::vector<std::vector<float>> grads;
    for (int r = 0; r < size; ++r)
      grads.push_back(gradientOf(r, step, kCount));
    const std::vector<float> expected = reference.run(grads);
    gradcomm_request request = nullptr;
    CHECK_OK(gradcomm_scalecom_reduce_scatter_start_f32(
        "rs.scalecom", grads[rank].data(), shard.data(), kCount, kTop,
        GRADCOMM_SELECT_EXACT, 0, 0.5f, GRADCOMM_REDUCE_AVERAGE, &request));
    CHECK_OK(gradcomm_wait(&request));
    CHECK(shard == std::vector<float>(expected.begin() + begin,
                                      expected.begin() + begin + length));
    results.add(shard);
  }

  // The parameter all-gather (equal shards): every rank's block, in order.
  const int64_t block = 100;
  std::vector<float> mine = gradientOf(rank, 9, block), gathered(block * size);
  CHECK_OK(gradcomm_all_gather_f32("ag", mine.data(), gathered.data(),
                                   block * size));
  for (int r = 0; r < size; ++r) {
    const std::vector<float> theirs = gradientOf(r, 9, block);
    CHECK(
        std::equal(theirs.begin(), theirs.end(), gathered.begin() + r * block));
  }
  results.add(gathered);
}

void checkLocalTopk(int rank, int size, Results &results) {
  constexpr int64_t kCount = 1000, kTop = 20;
  std::vector<float> grad = gradientOf(rank, 0, kCount), out(kCount);
  int64_t unionSize = 0;
  CHECK_OK(gradcomm_local_topk_all_gather_f32("topk", grad.data(), out.data(),
                                              kCount, kTop, GRADCOMM_REDUCE_SUM,
                                              &unionSize));
  CHECK(unionSize >= kTop && unionSize <= kTop * size);
  int64_t nonZero = 0;
  for (float value : out)
    nonZero += value != 0.0f;
  CHECK(nonZero <= unionSize);
  results.add(out);
  results.add(static_cast<double>(unionSize));
}

void checkGossipAndElastic(int rank, int size, Results &results) {
  constexpr int64_t kCount = 3000;
  std::vector<float> x = gradientOf(rank, 0, kCount);
  const std::vector<float> mine = x;
  CHECK_OK(gradcomm_gossip_exchange_f32("gossip", x.data(), kCount,
                                        GRADCOMM_SCHEDULE_RING, 0.5f, 1, 1));
  if (size == 2) { // both end at the pair's mean
    std::vector<float> other = gradientOf(1 - rank, 0, kCount);
    for (int64_t i = 0; i < kCount; ++i)
      CHECK(x[i] == 0.5f * mine[i] + 0.5f * other[i]);
  }
  results.add(x);
  gradcomm_request request = nullptr;
  CHECK_OK(gradcomm_gossip_exchange_start_f32("gossip", x.data(), kCount,
                                              GRADCOMM_SCHEDULE_RING, 0.5f, 1,
                                              1, &request));
  CHECK_OK(gradcomm_wait(&request));
  results.add(x);
  // The 16-bit wire's exchange (its own packets and mix), both forms.
  CHECK_OK(gradcomm_gossip_exchange_wire_f32("gossip16", x.data(), kCount,
                                             GRADCOMM_SCHEDULE_RING, 0.5f, 1, 1,
                                             GRADCOMM_WIRE_BF16));
  results.add(x);
  CHECK_OK(gradcomm_gossip_exchange_wire_start_f32(
      "gossip16", x.data(), kCount, GRADCOMM_SCHEDULE_RING, 0.5f, 1, 1,
      GRADCOMM_WIRE_F16, &request));
  CHECK_OK(gradcomm_wait(&request));
  results.add(x);

  double distance = -1;
  CHECK_OK(gradcomm_consensus_distance_f32(x.data(), kCount, &distance));
  CHECK(distance >= 0);
  results.add(distance);

  std::vector<float> replica = gradientOf(rank, 5, kCount);
  for (int step = 0; step < 3; ++step)
    CHECK_OK(gradcomm_elastic_average_f32("easgd", replica.data(), kCount,
                                          0.9f / static_cast<float>(size), 1));
  results.add(replica);
  std::vector<float> center(kCount);
  CHECK_OK(gradcomm_state_read("easgd", center.data(), kCount));
  results.add(center); // the same on every rank: compared across ranks below
  CHECK_OK(gradcomm_elastic_average_wire_f32("easgd16", replica.data(), kCount,
                                             0.9f / static_cast<float>(size), 1,
                                             GRADCOMM_WIRE_BF16));
  CHECK_OK(gradcomm_elastic_average_wire_start_f32(
      "easgd16", replica.data(), kCount, 0.9f / static_cast<float>(size), 1,
      GRADCOMM_WIRE_BF16, &request));
  CHECK_OK(gradcomm_wait(&request));
  results.add(replica);
  CHECK_OK(gradcomm_state_read("easgd16", center.data(), kCount));
  results.add(center);
}

/// Every rank reaches this point before any goes on (the puts and
/// accumulates a rank started before it have completed: they complete at
/// their unlock).
void barrier(const char *name) {
  float one = 1.0f;
  CHECK_OK(gradcomm_dense_all_reduce_f32(name, &one, 1, GRADCOMM_REDUCE_SUM));
}

/// The asynchronous ops over the transport's windows. What they compute
/// depends on how the ranks interleave, so they are checked by what holds
/// however they do, and left out of the results compared with MPI's.
void checkAsynchronous(int rank, int size) {
  constexpr int64_t kCount = 1000;
  // EASGD: each update takes e from a replica and adds it to the center
  // (x -= e, c += e atomically), so the replicas' sum plus the center
  // stays what it started at, the replicas' sum plus their mean, whatever
  // the order (a lost update would break it). Center on rank 0, then
  // sharded over the ranks.
  for (bool sharded : {false, true}) {
    const char *name = sharded ? "async-easgd-sharded" : "async-easgd";
    std::vector<float> x = gradientOf(rank, 7, kCount);
    std::vector<float> total = x;
    CHECK_OK(gradcomm_dense_all_reduce_f32(name, total.data(), kCount,
                                           GRADCOMM_REDUCE_SUM));
    for (int step = 0; step < 6; ++step)
      CHECK_OK(sharded ? gradcomm_elastic_average_sharded_f32(name, x.data(),
                                                              kCount, 0.3f, 1)
                       : gradcomm_elastic_average_async_f32(name, x.data(),
                                                            kCount, 0.3f, 1));
    barrier("async-easgd-done");
    std::vector<float> center(kCount), sum = x;
    CHECK_OK(gradcomm_state_read(name, center.data(), kCount));
    CHECK_OK(gradcomm_dense_all_reduce_f32("async-easgd-sum", sum.data(),
                                           kCount, GRADCOMM_REDUCE_SUM));
    int conserved = 0, moved = 0;
    for (int64_t i = 0; i < kCount; ++i) {
      const float start = total[i] + total[i] / static_cast<float>(size);
      conserved += std::fabs(sum[i] + center[i] - start) <=
                   1e-5f * (std::fabs(start) + 1.0f);
      moved += center[i] != total[i] / static_cast<float>(size);
    }
    CHECK(conserved == kCount);
    CHECK(moved > 0);
  }

  // Gossip: a replica of constant value r + 1 only ever mixes whole copies
  // (a torn copy is refused), so it stays constant, between 1 and n; with a
  // barrier between the calls, at 2 ranks each mixes the other's copy.
  std::vector<float> x(kCount, static_cast<float>(rank + 1));
  for (int step = 0; step < 4; ++step) {
    CHECK_OK(gradcomm_gossip_async_f32("async-gossip", x.data(), kCount,
                                       GRADCOMM_SCHEDULE_RANDOM, 0.5f, 1, 1));
    barrier("async-gossip-step");
  }
  CHECK(std::all_of(x.begin(), x.end(), [&](float v) { return v == x[0]; }));
  CHECK(x[0] >= 1.0f && x[0] <= static_cast<float>(size));
  if (size == 2)
    CHECK(x[0] != static_cast<float>(rank + 1));
  uint64_t histogram[8] = {}, torn = 1;
  CHECK_OK(gradcomm_stats_staleness("async-gossip", histogram, &torn));
  CHECK(torn == 0);

  // A failure on one rank reaches the others through their windows: rank
  // 1's non-finite replica fails its call, and every other rank's next
  // call on the state fails with rank 1's message.
  std::vector<float> y(kCount, 1.0f);
  CHECK_OK(gradcomm_gossip_async_f32("async-failure", y.data(), kCount,
                                     GRADCOMM_SCHEDULE_RANDOM, 0.5f, 1, 1));
  barrier("async-failure-open");
  if (rank == 1) {
    y[5] = NAN;
    CHECK(gradcomm_gossip_async_f32("async-failure", y.data(), kCount,
                                    GRADCOMM_SCHEDULE_RANDOM, 0.5f, 1,
                                    1) == GRADCOMM_ERR_NON_FINITE);
  }
  barrier("async-failure-spread");
  if (rank != 1) {
    CHECK(gradcomm_gossip_async_f32("async-failure", y.data(), kCount,
                                    GRADCOMM_SCHEDULE_RANDOM, 0.5f, 1,
                                    1) == GRADCOMM_ERR_NON_FINITE);
    CHECK(std::strstr(gradcomm_last_error(), "non-finite replica on rank 1"));
  }
}

void checkAgreement(int rank, Results &results) {
  std::vector<float> data(16, 1.0f);
  // Different counts: a mismatch on every rank.
  CHECK(gradcomm_dense_all_reduce_f32("mismatch", data.data(), 10 + rank,
                                      GRADCOMM_REDUCE_SUM) ==
        GRADCOMM_ERR_MISMATCH);
  // One rank's bad argument: every rank fails with that rank's message.
  CHECK(gradcomm_dense_all_reduce_f32("bad", rank == 1 ? nullptr : data.data(),
                                      16, GRADCOMM_REDUCE_SUM) ==
        GRADCOMM_ERR_INVALID_ARGUMENT);
  CHECK(std::strstr(gradcomm_last_error(), "on rank 1 of"));
  // A non-finite input on rank 0: GRADCOMM_ERR_NON_FINITE everywhere.
  std::vector<float> nan(16, 1.0f);
  if (rank == 0)
    nan[3] = std::nanf("");
  CHECK(gradcomm_dense_all_reduce_f32("nan", nan.data(), 16,
                                      GRADCOMM_REDUCE_SUM) ==
        GRADCOMM_ERR_NON_FINITE);
  CHECK(std::strstr(gradcomm_last_error(), "non-finite input on rank 0"));
  // And the job goes on.
  CHECK_OK(gradcomm_dense_all_reduce_f32("after", data.data(), 16,
                                         GRADCOMM_REDUCE_SUM));
  results.add(data);
}

void checkCheckpointAndCounters(const std::string &prefix, int rank) {
  const std::string path = prefix + ".checkpoint";
  CHECK_OK(gradcomm_state_save(path.c_str()));
  std::vector<float> before(1000), after(1000);
  CHECK_OK(gradcomm_state_read("scalecom", before.data(), 1000));
  CHECK_OK(gradcomm_state_restore(path.c_str()));
  CHECK_OK(gradcomm_state_read("scalecom", after.data(), 1000));
  CHECK(before == after);
  const std::string stats = prefix + ".stats.json";
  CHECK_OK(gradcomm_stats_dump(stats.c_str()));
  if (rank == 0) {
    std::ifstream file(stats);
    std::string text((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
    CHECK(text.find("\"scalecom\"") != std::string::npos);
  }
}

/// Every op, the same calls on every rank in the same order.
void runScript(int rank, int size, const std::string &directory,
               const std::string &label) {
  Results results(directory + "/" + label + ".rank" + std::to_string(rank));
  checkDense(rank, size, results);
  checkScalecom(rank, size, results);
  checkReduceScatter(rank, size, results);
  checkLocalTopk(rank, size, results);
  checkGossipAndElastic(rank, size, results);
  checkAgreement(rank, results);
  checkCheckpointAndCounters(directory + "/" + label, rank);
}

int runOverDouble(gradcomm::test::SharedRegion &region, int rank,
                  const std::string &directory) {
  auto owned = std::make_unique<gradcomm::test::TransportDouble>(region, rank);
  gradcomm::test::TransportDouble &transport = *owned;
  gradcomm::Call call("init_over_double", nullptr);
  CHECK_OK(gradcomm::bindWorld(call, std::move(owned), /*ownsMpi=*/false));
  runScript(rank, region.size(), directory, "double");
  checkAsynchronous(rank, region.size());

  // What the double has not is refused, naming the transport, on every
  // rank. (The ranks of each row of a 1 x n grid: one rank each.)
  const int64_t shape[] = {1, region.size()};
  const int32_t axes[] = {0};
  gradcomm_group group = nullptr;
  CHECK(gradcomm_group_from_grid(shape, 2, axes, 1, &group) ==
        GRADCOMM_ERR_MPI);
  CHECK(std::strstr(gradcomm_last_error(), "has no groups"));

  // Every kind of transfer went through the double; MPI never started.
  for (const char *kind : {"all-reduce", "broadcast", "all-gather",
                           "reduce-scatter", "send", "receive", "window"}) {
    auto it = transport.calls().find(kind);
    CHECK(it != transport.calls().end() && it->second > 0);
  }
  int mpiInitialized = 1;
  MPI_Initialized(&mpiInitialized);
  CHECK(!mpiInitialized);
  CHECK_OK(gradcomm_finalize());
  return failures == 0 ? 0 : 1;
}

/// Over a double made without windows, the asynchronous ops are refused on
/// every rank, naming the transport.
int runOverDoubleWithoutWindows(gradcomm::test::SharedRegion &region,
                                int rank) {
  gradcomm::Call call("init_over_double", nullptr);
  CHECK_OK(gradcomm::bindWorld(
      call,
      std::make_unique<gradcomm::test::TransportDouble>(region, rank,
                                                        /*windows=*/false),
      /*ownsMpi=*/false));
  std::vector<float> x(100, 1.0f);
  CHECK(gradcomm_gossip_async_f32("async", x.data(), 100,
                                  GRADCOMM_SCHEDULE_RANDOM, 0.5f, 1,
                                  1) == GRADCOMM_ERR_UNSUPPORTED);
  CHECK(std::strstr(gradcomm_last_error(),
                    "needs one-sided communication (windows), which the "
                    "transport 'transport double' does not have"));
  CHECK(gradcomm_elastic_average_async_f32("async", x.data(), 100, 0.5f, 1) ==
        GRADCOMM_ERR_UNSUPPORTED);
  CHECK_OK(gradcomm_finalize());
  return failures == 0 ? 0 : 1;
}

int runOverMpi(const std::string &directory) {
  CHECK_OK(gradcomm_init());
  int rank = 0, size = 1;
  CHECK_OK(gradcomm_rank(&rank));
  CHECK_OK(gradcomm_size(&size));
  runScript(rank, size, directory, "mpi");
  checkAsynchronous(rank, size);
  CHECK_OK(gradcomm_finalize());
  return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "mpi" && argc == 3)
    return runOverMpi(argv[2]);
  const bool windows = mode == "double";
  if ((mode != "double" && mode != "double-without-windows") || argc != 4) {
    std::fprintf(stderr,
                 "usage: %s double N DIR | double-without-windows N DIR | "
                 "mpi DIR\n",
                 argv[0]);
    return 2;
  }
  const int size = std::atoi(argv[2]);
  gradcomm::test::SharedRegion region(size);
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    pid_t child = fork();
    if (child == 0)
      _exit(windows ? runOverDouble(region, rank, argv[3])
                    : runOverDoubleWithoutWindows(region, rank));
    children.push_back(child);
  }
  int failed = 0;
  for (int rank = 0; rank < size; ++rank) {
    int status = 0;
    waitpid(children[rank], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "rank %d failed (status %d)\n", rank, status);
      ++failed;
    }
  }
  if (failed == 0)
    std::printf("%d ranks over the transport double%s: ok\n", size,
                windows ? "" : " without windows");
  return failed == 0 ? 0 : 1;
}
