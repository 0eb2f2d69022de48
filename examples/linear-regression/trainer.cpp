//===- trainer.cpp - A trainer that links a GradComm-compiled step --------===//
//
// Part of the GradComm project.
//
// Linear regression on data each rank generates for itself (its own shard),
// with weights initialized identically (zero) on every rank. The training
// step is MLIR compiled by gradcomm-compile (step.mlir.in); this program only
// feeds it memref descriptors, frees what it returns, and reports loss,
// bytes on the wire and time per step.
//
// With --reference it also runs the same algorithm written here in C++
// (synchronous SGD, or ScaleCom from docs/design/architecture.md section 2) and
// checks, every step, that the compiled step gives the same weights bit for bit
// and that all replicas are bit-identical. The reference shares only MPI's
// reduction with the runtime (same call, same data, so the same bits).
//
//   mpiexec -n 4 ./trainer --steps 50
//   mpiexec -n 4 ./trainer --steps 20 --reference scalecom --k 128 --beta 0.5
//   mpiexec -n 4 ./trainer-easgd --steps 20 --reference easgd --period 2
//
//===----------------------------------------------------------------------===//

#include "step.h"

#include "gradcomm/runtime.h"
#include "gradcomm/runtime_memref.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace {

constexpr int kBatch = 8;               // rows per rank
constexpr int kIn = 64;                 // features
constexpr int kOut = 32;                // outputs
constexpr float kScale = 9.765625e-04f; // 2^-10, as in step.mlir.in
/// The runtime's counter names for the weight's communication: the
/// gradient's (dense, ScaleCom, local top-k) or the parameter's (gossip,
/// EASGD).
constexpr const char *kWeightOps[] = {"step_arg0_grad", "step_arg0_gossip",
                                      "step_arg0_easgd"};

struct Options {
  int steps = 20;
  std::string reference = "none"; // none | dense | scalecom | gossip | easgd
  std::string schedule = "matching";
  float mixing = 0.5f;
  float alpha = 0.0f; // EASGD; 0: 0.9 / n, as gradcomm-easgd's default
  int64_t period = 1;
  uint64_t seed = 0;
  bool consensus = false;
  int64_t k = 128;
  std::string selection = "exact";
  int64_t chunk = 0;
  float beta = 1.0f;
  int saveAfter = -1;
  std::string checkpoint;
  std::string resume;
  bool quiet = false;
};

[[noreturn]] void usage(const char *why) {
  std::fprintf(
      stderr,
      "trainer: %s\nusage: trainer [--steps N] [--reference "
      "none|dense|scalecom|gossip|easgd] [--k K] [--selection exact|chunk] "
      "[--chunk C] [--beta B] [--save-after S --checkpoint P] "
      "[--resume P] [--schedule S --mixing A --seed N] "
      "[--alpha A --period T] "
      "[--consensus] [--quiet]\n",
      why);
  std::exit(2);
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--steps")
      o.steps = std::stoi(value());
    else if (a == "--reference")
      o.reference = value();
    else if (a == "--k")
      o.k = std::stoll(value());
    else if (a == "--selection")
      o.selection = value();
    else if (a == "--chunk")
      o.chunk = std::stoll(value());
    else if (a == "--beta")
      o.beta = std::stof(value());
    else if (a == "--save-after")
      o.saveAfter = std::stoi(value());
    else if (a == "--checkpoint")
      o.checkpoint = value();
    else if (a == "--resume")
      o.resume = value();
    else if (a == "--quiet")
      o.quiet = true;
    else if (a == "--schedule")
      o.schedule = value();
    else if (a == "--mixing")
      o.mixing = std::stof(value());
    else if (a == "--seed")
      o.seed = std::stoull(value());
    else if (a == "--alpha")
      o.alpha = std::stof(value());
    else if (a == "--period")
      o.period = std::stoll(value());
    else if (a == "--consensus")
      o.consensus = true;
    else
      usage(("unknown argument " + a).c_str());
  }
  if (o.reference != "none" && o.reference != "dense" &&
      o.reference != "scalecom" && o.reference != "gossip" &&
      o.reference != "easgd")
    usage("--reference must be none, dense, scalecom, gossip or easgd");
  return o;
}

/// Deterministic value in [-1, 1) for (seed, rank, step, i): each rank's
/// data shard, and the true weights.
float value(uint64_t seed, int rank, uint64_t step, uint64_t i) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull +
               uint64_t(rank) * 0xbf58476d1ce4e5b9ull +
               step * 0x94d049bb133111ebull + i;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return float(int64_t(z >> 40) - (1 << 23)) / float(1 << 23);
}

/// This rank's batch at `step`: x uniform, t = x W_true + small noise.
void makeBatch(int rank, uint64_t step, std::vector<float> &x,
               std::vector<float> &t) {
  x.resize(kBatch * kIn);
  t.assign(kBatch * kOut, 0.0f);
  for (int i = 0; i < kBatch * kIn; ++i)
    x[i] = value(1, rank, step, i);
  for (int m = 0; m < kBatch; ++m)
    for (int n = 0; n < kOut; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < kIn; ++k)
        acc += x[m * kIn + k] * value(2, 0, 0, k * kOut + n);
      t[m * kOut + n] = acc + 0.01f * value(3, rank, step, m * kOut + n);
    }
}

gradcomm_memref_f32_2d view2d(std::vector<float> &data, int64_t rows,
                              int64_t cols) {
  return {data.data(), data.data(), 0, {rows, cols}, {cols, 1}};
}
gradcomm_memref_f32_1d view1d(std::vector<float> &data) {
  int64_t n = static_cast<int64_t>(data.size());
  return {data.data(), data.data(), 0, {n}, {1}};
}

/// The C++ reference of one step, in the loop order of step.mlir.in, so
/// the local gradients have the same bits as the compiled ones.
struct Reference {
  std::vector<float> w, b, memory;
  /// EASGD: the centers of w and b (replicated on every rank).
  std::vector<float> centerW, centerB;
  /// Gossip: this rank's weights after its local step, before mixing.
  std::vector<float> afterLocalStep;
  uint64_t step = 0;

  Reference() : w(kIn * kOut, 0.0f), b(kOut, 0.0f), memory(kIn * kOut, 0.0f) {}

  void run(const Options &o, const std::vector<float> &x,
           const std::vector<float> &t, int size) {
    std::vector<float> e(kBatch * kOut);
    for (int m = 0; m < kBatch; ++m)
      for (int n = 0; n < kOut; ++n) {
        float acc = 0.0f;
        for (int k = 0; k < kIn; ++k)
          acc += x[m * kIn + k] * w[k * kOut + n];
        e[m * kOut + n] = (acc + b[n]) - t[m * kOut + n];
      }
    std::vector<float> gw(kIn * kOut), gb(kOut, 0.0f);
    for (int i = 0; i < kIn; ++i)
      for (int j = 0; j < kOut; ++j) {
        float acc = 0.0f;
        for (int r = 0; r < kBatch; ++r)
          acc += x[r * kIn + i] * e[r * kOut + j];
        gw[i * kOut + j] = acc;
      }
    for (int r = 0; r < kBatch; ++r)
      for (int j = 0; j < kOut; ++j)
        gb[j] += e[r * kOut + j];

    if (o.reference == "gossip" || o.reference == "easgd") {
      localStep(gw, gb, size);
      if (o.reference == "gossip")
        gossip(o, size);
      else
        elasticAverage(o, size);
      ++step;
      return;
    }
    std::vector<float> reduced(kIn * kOut, 0.0f);
    if (o.reference == "dense") {
      reduced = gw;
      MPI_Allreduce(MPI_IN_PLACE, reduced.data(), kIn * kOut, MPI_FLOAT,
                    MPI_SUM, MPI_COMM_WORLD);
    } else {
      scalecom(o, gw, reduced, size);
    }
    MPI_Allreduce(MPI_IN_PLACE, gb.data(), kOut, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    for (int i = 0; i < kIn * kOut; ++i)
      w[i] = w[i] - reduced[i] * kScale;
    for (int j = 0; j < kOut; ++j)
      b[j] = b[j] - gb[j] * kScale;
    ++step;
  }

  /// The local step of gossip and EASGD: the unbiased estimate n * g of
  /// the summed gradient.
  void localStep(const std::vector<float> &gw, const std::vector<float> &gb,
                 int size) {
    const float n = static_cast<float>(size);
    for (int i = 0; i < kIn * kOut; ++i)
      w[i] = w[i] - (gw[i] * n) * kScale;
    for (int j = 0; j < kOut; ++j)
      b[j] = b[j] - (gb[j] * n) * kScale;
    afterLocalStep = w;
  }

  /// Synchronous EASGD (docs/gossip.md), written from the paper's update:
  /// the first step sets each center to the replicas' mean; every period
  /// d = x - c, x -= alpha d, c += alpha sum(d).
  void elasticAverage(const Options &o, int size) {
    const float alpha =
        o.alpha > 0.0f ? o.alpha : static_cast<float>(0.9 / size);
    for (auto [x, center] :
         {std::pair(&w, &centerW), std::pair(&b, &centerB)}) {
      const int count = static_cast<int>(x->size());
      if (step == 0) {
        *center = *x;
        MPI_Allreduce(MPI_IN_PLACE, center->data(), count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
        for (float &c : *center)
          c = c / static_cast<float>(size);
      }
      if (step % o.period != 0)
        continue;
      std::vector<float> d(count), sum(count);
      for (int i = 0; i < count; ++i)
        d[i] = sum[i] = (*x)[i] - (*center)[i];
      MPI_Allreduce(MPI_IN_PLACE, sum.data(), count, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      for (int i = 0; i < count; ++i) {
        (*x)[i] = (*x)[i] - alpha * d[i];
        (*center)[i] = (*center)[i] + alpha * sum[i];
      }
    }
  }

  /// Gossiping SGD (docs/design/architecture.md section 3): a local step with
  /// the unbiased estimate n * g of the summed gradient, then pairwise mixing
  /// with the schedule's peer (the runtime's documented schedule function).
  void gossip(const Options &o, int size) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = -1;
    gradcomm_schedule schedule = o.schedule == "ring" ? GRADCOMM_SCHEDULE_RING
                                 : o.schedule == "hypercube"
                                     ? GRADCOMM_SCHEDULE_HYPERCUBE
                                     : GRADCOMM_SCHEDULE_MATCHING;
    gradcomm_gossip_peer(schedule, o.seed, step, rank, size, &peer);
    if (peer < 0)
      return;
    for (std::vector<float> *x : {&w, &b}) {
      std::vector<float> theirs(x->size());
      MPI_Sendrecv(x->data(), static_cast<int>(x->size()), MPI_FLOAT, peer, 7,
                   theirs.data(), static_cast<int>(x->size()), MPI_FLOAT, peer,
                   7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (size_t i = 0; i < x->size(); ++i)
        (*x)[i] = (1.0f - o.mixing) * (*x)[i] + o.mixing * theirs[i];
    }
  }

  /// docs/design/architecture.md section 2, written from the text: accumulate,
  /// the cyclic leader selects from its own p and broadcasts, one all-reduce of
  /// the k values, low-pass memory update (elementwise form).
  void scalecom(const Options &o, const std::vector<float> &g,
                std::vector<float> &out, int size) {
    const int64_t n = kIn * kOut;
    std::vector<float> p(n);
    for (int64_t i = 0; i < n; ++i)
      p[i] = memory[i] + g[i];
    std::vector<int64_t> indices;
    if (o.selection == "chunk") {
      for (int64_t begin = 0; begin < n; begin += o.chunk) {
        int64_t best = begin;
        for (int64_t i = begin; i < std::min(n, begin + o.chunk); ++i)
          if (std::fabs(p[i]) > std::fabs(p[best]))
            best = i;
        indices.push_back(best);
      }
    } else {
      indices.resize(n);
      std::iota(indices.begin(), indices.end(), 0);
      std::stable_sort(indices.begin(), indices.end(),
                       [&](int64_t a, int64_t c) {
                         return std::fabs(p[a]) > std::fabs(p[c]);
                       });
      indices.resize(o.k);
      std::sort(indices.begin(), indices.end());
    }
    const int64_t k = static_cast<int64_t>(indices.size());
    // Only the leader's selection counts.
    MPI_Bcast(indices.data(), static_cast<int>(k), MPI_INT64_T,
              static_cast<int>(step % size), MPI_COMM_WORLD);
    std::vector<float> values(k);
    for (int64_t j = 0; j < k; ++j)
      values[j] = p[indices[j]];
    MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(k), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
    std::fill(out.begin(), out.end(), 0.0f);
    std::vector<char> selected(n, 0);
    for (int64_t j = 0; j < k; ++j) {
      out[indices[j]] = values[j];
      selected[indices[j]] = 1;
    }
    for (int64_t i = 0; i < n; ++i)
      memory[i] =
          selected[i] ? (1.0f - o.beta) * memory[i] : memory[i] + o.beta * g[i];
  }
};

uint64_t hashBits(const std::vector<float> &data) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const unsigned char *bytes =
      reinterpret_cast<const unsigned char *>(data.data());
  for (size_t i = 0; i < data.size() * sizeof(float); ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// The mean over ranks of each element, in double.
std::vector<double> replicaMean(const std::vector<float> &x) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<double> mean(x.begin(), x.end());
  MPI_Allreduce(MPI_IN_PLACE, mean.data(), static_cast<int>(mean.size()),
                MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (double &v : mean)
    v /= size;
  return mean;
}

bool sameOnAllRanks(uint64_t hash) {
  uint64_t min = 0, max = 0;
  MPI_Allreduce(&hash, &min, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&hash, &max, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return min == max;
}

void check(gradcomm_status status) {
  if (status != GRADCOMM_OK) {
    std::fprintf(stderr, "%s\n", gradcomm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/// Trainer state next to the runtime's: weights, bias, step.
void saveWeights(const std::string &path, int rank, int step,
                 const std::vector<float> &w, const std::vector<float> &b) {
  std::ofstream f(path + ".weights.rank" + std::to_string(rank),
                  std::ios::binary);
  f.write(reinterpret_cast<const char *>(&step), sizeof(step));
  f.write(reinterpret_cast<const char *>(w.data()), sizeof(float) * w.size());
  f.write(reinterpret_cast<const char *>(b.data()), sizeof(float) * b.size());
}

int loadWeights(const std::string &path, int rank, std::vector<float> &w,
                std::vector<float> &b) {
  std::ifstream f(path + ".weights.rank" + std::to_string(rank),
                  std::ios::binary);
  int step = 0;
  f.read(reinterpret_cast<char *>(&step), sizeof(step));
  f.read(reinterpret_cast<char *>(w.data()), sizeof(float) * w.size());
  f.read(reinterpret_cast<char *>(b.data()), sizeof(float) * b.size());
  if (!f) {
    std::fprintf(stderr, "trainer: cannot read weights from %s\n",
                 path.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return step;
}

} // namespace

int main(int argc, char **argv) {
  // MPI_THREAD_MULTIPLE: the asynchronous steps' progress thread needs it
  // (docs/gossip.md); the others do not mind.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  // The asynchronous ops' progress thread under this program's MPI: it
  // calls gradcomm_finalize before MPI_Finalize (docs/runtime.md, "The
  // finalize contract"). A value set by the user wins.
  setenv("GRADCOMM_ASYNC_PROGRESS", "1", /*overwrite=*/0);
  Options o = parse(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // Identical initial weights on every rank (zero; a trainer with random
  // initialization would broadcast rank 0's).
  std::vector<float> w(kIn * kOut, 0.0f), b(kOut, 0.0f);
  // --consensus: replicas start apart (w = rank) and see zero data, so only
  // the gossip exchanges move them.
  if (o.consensus)
    std::fill(w.begin(), w.end(), static_cast<float>(rank));
  int first = 0;
  if (!o.resume.empty()) {
    check(gradcomm_state_restore(o.resume.c_str()));
    first = loadWeights(o.resume, rank, w, b);
  }
  Reference reference;
  reference.w = w;
  if (o.reference != "none" && first != 0)
    usage("--reference and --resume do not mix");

  std::vector<float> x, t;
  double stepSeconds = 0.0;
  int failures = 0;
  for (int step = first; step < o.steps; ++step) {
    makeBatch(rank, step, x, t);
    if (o.consensus) {
      std::fill(x.begin(), x.end(), 0.0f);
      std::fill(t.begin(), t.end(), 0.0f);
    }
    const bool gossip = o.reference == "gossip" || o.consensus;
    // All-reduce SGD and ScaleCom promise bit-identical replicas.
    const bool identicalReplicas =
        o.reference == "dense" || o.reference == "scalecom";
    gradcomm_memref_f32_2d wd = view2d(w, kIn, kOut),
                           xd = view2d(x, kBatch, kIn),
                           td = view2d(t, kBatch, kOut);
    gradcomm_memref_f32_1d bd = view1d(b);
    step_results results;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    _mlir_ciface_step(&results, &wd, &bd, &xd, &td);
    stepSeconds += MPI_Wtime() - start;
    // Copy the new parameters out of the buffers the step returned (it owns
    // nothing after returning: the caller frees them).
    const float *wn = results.r0.aligned + results.r0.offset;
    const float *bn = results.r1.aligned + results.r1.offset;
    float loss = results.r2.aligned[results.r2.offset];
    std::copy(wn, wn + w.size(), w.begin());
    std::copy(bn, bn + b.size(), b.begin());
    gradcomm_free_buffer(results.r0.allocated);
    gradcomm_free_buffer(results.r1.allocated);
    gradcomm_free_buffer(results.r2.allocated);

    if (o.reference != "none") {
      reference.run(o, x, t, size);
      if (w != reference.w || b != reference.b) {
        std::fprintf(stderr,
                     "rank %d step %d: compiled weights differ from the %s "
                     "reference\n",
                     rank, step, o.reference.c_str());
        ++failures;
      }
    }
    if (o.reference == "gossip") {
      // Doubly stochastic mixing: the mean of the replicas moves only by
      // the mean of the local updates, i.e. equals the mean of the
      // replicas after their local steps, before mixing.
      std::vector<double> meanAfter = replicaMean(w);
      std::vector<double> meanLocal = replicaMean(reference.afterLocalStep);
      double worst = 0.0;
      for (size_t i = 0; i < w.size(); ++i)
        worst = std::max(worst, std::fabs(meanAfter[i] - meanLocal[i]));
      if (worst > 1e-6) {
        if (rank == 0)
          std::fprintf(stderr,
                       "step %d: the replica mean moved %g beyond the mean "
                       "local update\n",
                       step, worst);
        ++failures;
      }
    }
    double distance = 0.0;
    check(gradcomm_consensus_distance_f32(
        w.data(), static_cast<int64_t>(w.size()), &distance));
    if (gossip && rank == 0 && !o.quiet)
      std::printf("step %3d  consensus distance %.6g\n", step, distance);
    if (identicalReplicas && !sameOnAllRanks(hashBits(w))) {
      if (rank == 0)
        std::fprintf(stderr, "step %d: replicas differ across ranks\n", step);
      ++failures;
    }
    if (rank == 0 && !o.quiet)
      std::printf("step %3d  loss %.6f\n", step, loss / (kBatch * size));
    if (step + 1 == o.saveAfter && !o.checkpoint.empty()) {
      check(gradcomm_state_save(o.checkpoint.c_str()));
      saveWeights(o.checkpoint, rank, step + 1, w, b);
    }
  }

  if (o.consensus && !sameOnAllRanks(hashBits(w))) {
    if (rank == 0)
      std::fprintf(stderr, "replicas did not reach consensus\n");
    ++failures;
  }
  gradcomm_op_stats stats{};
  for (const char *name : kWeightOps) {
    check(gradcomm_stats_get(name, &stats));
    if (stats.calls)
      break;
  }
  int anyFailure = 0;
  MPI_Allreduce(&failures, &anyFailure, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    int steps = std::max(1, o.steps - first);
    std::printf("weights-hash %016llx\n",
                static_cast<unsigned long long>(hashBits(w)));
    std::printf(
        "weight bytes sent per step: values %llu, indices "
        "%llu (calls %llu)\n",
        static_cast<unsigned long long>(stats.value_bytes_sent /
                                        std::max<uint64_t>(1, stats.calls)),
        static_cast<unsigned long long>(stats.index_bytes_sent /
                                        std::max<uint64_t>(1, stats.calls)),
        static_cast<unsigned long long>(stats.calls));
    std::printf("time per step: %.3f ms\n", 1e3 * stepSeconds / steps);
    if (o.reference != "none")
      std::printf("reference (%s): %s\n", o.reference.c_str(),
                  anyFailure ? "MISMATCH" : "bit-identical");
  }
  gradcomm_finalize();
  MPI_Finalize();
  return anyFailure ? 1 : 0;
}
