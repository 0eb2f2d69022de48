//===- trainer.cpp - Fashion-MNIST MLP trained with a compiled step -------===//
//
// Part of the GradComm project.
//
// The main job (docs/design/architecture.md section 8): a 784-128-10 MLP on
// Fashion-MNIST, data-parallel over the MPI ranks, its training step compiled
// by gradcomm-compile with one communication strategy. Weights start equal
// on every rank (rank 0's, broadcast); each rank reads its own disjoint
// slice of every global batch. Every --eval-every steps (and at the end) it
// logs one CSV row: step, epoch, training wall time and communication time
// (both means over ranks), bytes sent (values, indices), training loss, test
// loss and accuracy of the averaged model, test accuracy of the replicas
// (mean, min, max: they differ only for gossip) and the consensus distance
// over all parameters.
//
//   mpiexec -n 4 ./fashion-mnist-scalecom --seed 1 --epochs 2 --lr 0.1 \
//       --eval-every 100 --log run.csv
//
//===----------------------------------------------------------------------===//

#include "step.h"

#include "gradcomm/runtime.h"
#include "gradcomm/runtime_memref.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kBatch = 32; // images per rank per step (step.mlir.in)
constexpr int kIn = 784, kHidden = 128, kClasses = 10;

struct Dataset {
  std::vector<float> images; // n x 784, scaled to [0, 1]
  std::vector<int> labels;
  int count = 0;
};

/// Reads a gzip-compressed IDX file (gzip from the base system).
std::vector<unsigned char> readGzip(const std::string &path) {
  std::string command = "gzip -dc '" + path + "'";
  FILE *pipe = popen(command.c_str(), "r");
  std::vector<unsigned char> bytes;
  if (!pipe)
    return bytes;
  unsigned char buffer[1 << 16];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    bytes.insert(bytes.end(), buffer, buffer + got);
  if (pclose(pipe) != 0)
    bytes.clear();
  return bytes;
}

uint32_t bigEndian(const unsigned char *p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) |
         (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

bool load(const std::string &dir, const std::string &prefix, Dataset &data) {
  std::vector<unsigned char> images =
      readGzip(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  std::vector<unsigned char> labels =
      readGzip(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (images.size() < 16 || labels.size() < 8 ||
      bigEndian(images.data()) != 2051 || bigEndian(labels.data()) != 2049)
    return false;
  data.count = static_cast<int>(bigEndian(images.data() + 4));
  if (bigEndian(labels.data() + 4) != uint32_t(data.count) ||
      images.size() != 16 + size_t(data.count) * kIn ||
      labels.size() != 8 + size_t(data.count))
    return false;
  data.images.resize(size_t(data.count) * kIn);
  for (size_t i = 0; i < data.images.size(); ++i)
    data.images[i] = images[16 + i] / 255.0f;
  data.labels.assign(labels.begin() + 8, labels.end());
  return true;
}

struct Model {
  std::vector<float> w1 = std::vector<float>(kIn * kHidden);
  std::vector<float> b1 = std::vector<float>(kHidden, 0.0f);
  std::vector<float> w2 = std::vector<float>(kHidden * kClasses);
  std::vector<float> b2 = std::vector<float>(kClasses, 0.0f);
  std::vector<std::vector<float> *> parameters() {
    return {&w1, &b1, &w2, &b2};
  }
};

/// Test loss (mean cross-entropy) and accuracy of `model` on samples
/// [begin, end) of `test` (host forward pass), as sums over the samples.
struct Evaluation {
  double lossSum = 0.0;
  double correct = 0.0;
};

Evaluation evaluate(const Model &model, const Dataset &test, int begin,
                    int end) {
  Evaluation result;
  std::vector<float> hidden(kHidden);
  float logits[kClasses];
  for (int s = begin; s < end; ++s) {
    const float *x = &test.images[size_t(s) * kIn];
    for (int j = 0; j < kHidden; ++j)
      hidden[j] = model.b1[j];
    for (int i = 0; i < kIn; ++i) {
      const float xi = x[i];
      if (xi == 0.0f)
        continue;
      const float *row = &model.w1[size_t(i) * kHidden];
      for (int j = 0; j < kHidden; ++j)
        hidden[j] += xi * row[j];
    }
    for (float &h : hidden)
      h = std::max(h, 0.0f);
    int best = 0;
    float top = -INFINITY;
    for (int c = 0; c < kClasses; ++c) {
      float acc = model.b2[c];
      for (int j = 0; j < kHidden; ++j)
        acc += hidden[j] * model.w2[j * kClasses + c];
      logits[c] = acc;
      if (acc > top) {
        top = acc;
        best = c;
      }
    }
    double sum = 0.0;
    for (float logit : logits)
      sum += std::exp(double(logit) - top);
    result.lossSum += std::log(sum) - (logits[test.labels[s]] - top);
    result.correct += best == test.labels[s];
  }
  return result;
}

void check(gradcomm_status status) {
  if (status != GRADCOMM_OK) {
    std::fprintf(stderr, "%s\n", gradcomm_last_error());
    // mpiexec kills every rank at the first MPI_Abort: let the message out.
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

gradcomm_memref_f32_2d view2d(std::vector<float> &v, int64_t rows,
                              int64_t cols) {
  return {v.data(), v.data(), 0, {rows, cols}, {cols, 1}};
}
gradcomm_memref_f32_1d view1d(std::vector<float> &v) {
  int64_t n = static_cast<int64_t>(v.size());
  return {v.data(), v.data(), 0, {n}, {1}};
}

template <typename Memref>
void take(const Memref &result, std::vector<float> &into) {
  const float *data = result.aligned + result.offset;
  std::copy(data, data + into.size(), into.begin());
  gradcomm_free_buffer(result.allocated);
}

struct Options {
  uint32_t seed = 1;
  int steps = 300;
  double epochs = 0.0; // when > 0, overrides steps
  double lr = 0.1;
  int evalEvery = 0;   // 0: evaluate at the end only
  int evalSamples = 0; // 0: the whole test set
  std::string label = "run", logPath, dir;
  /// --straggler RANK:FACTOR: that rank computes FACTOR times slower.
  int stragglerRank = -1;
  double stragglerFactor = 1.0;
  /// --delay-ms M: every rank sleeps an exponential delay of mean M ms per
  /// step, drawn from (--delay-seed, rank).
  double delayMs = 0.0;
  uint32_t delaySeed = 0;
  /// --compute-ms C: every rank also sleeps C ms per step, a model whose
  /// compute is C ms (what a straggler's factor then multiplies). Sleeps,
  /// not spins: ranks that share cores do not slow each other down.
  double computeMs = 0.0;
  /// --time-budget S: train S seconds (instead of --steps/--epochs) and
  /// evaluate --eval-times times at evenly spaced times.
  double timeBudget = 0.0;
  int evalTimes = 8;
  /// --stop-alone: in a time-bounded run, each rank stops and evaluates by
  /// its own clock (asynchronous strategies: their steps need no other
  /// rank). Otherwise the ranks agree every step, as the collectives of a
  /// synchronous step need every rank at the same step.
  bool stopAlone = false;
  /// --free-running: no barrier before each step (stragglers and delays
  /// imply it): time is the elapsed wall time, as a user sees it.
  bool freeRunning = false;
};

/// Parses the command line; false (after a message on rank 0) when bad.
bool parseOptions(int argc, char **argv, int rank, Options &options) {
  const char *dirEnv = std::getenv("FASHION_MNIST_DIR");
  options.dir = dirEnv ? dirEnv : "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : nullptr;
    char *end = nullptr;
    bool ok = value != nullptr;
    if (a == "--seed" && ok)
      options.seed = uint32_t(std::strtoul(value, &end, 10));
    else if (a == "--steps" && ok)
      options.steps = int(std::strtol(value, &end, 10));
    else if (a == "--epochs" && ok)
      options.epochs = std::strtod(value, &end);
    else if (a == "--lr" && ok)
      options.lr = std::strtod(value, &end);
    else if (a == "--eval-every" && ok)
      options.evalEvery = int(std::strtol(value, &end, 10));
    else if (a == "--eval-samples" && ok)
      options.evalSamples = int(std::strtol(value, &end, 10));
    else if (a == "--label" && ok)
      options.label = value;
    else if (a == "--log" && ok)
      options.logPath = value;
    else if (a == "--data" && ok)
      options.dir = value;
    else if (a == "--straggler" && ok) {
      options.stragglerRank = int(std::strtol(value, &end, 10));
      if (*end == ':')
        options.stragglerFactor = std::strtod(end + 1, &end);
      else
        ok = false;
      options.freeRunning = true;
    } else if (a == "--delay-ms" && ok) {
      options.delayMs = std::strtod(value, &end);
      options.freeRunning = true;
    } else if (a == "--compute-ms" && ok) {
      options.computeMs = std::strtod(value, &end);
      options.freeRunning = true;
    } else if (a == "--delay-seed" && ok)
      options.delaySeed = uint32_t(std::strtoul(value, &end, 10));
    else if (a == "--time-budget" && ok) {
      options.timeBudget = std::strtod(value, &end);
      options.freeRunning = true;
    } else if (a == "--eval-times" && ok)
      options.evalTimes = int(std::strtol(value, &end, 10));
    else if (a == "--stop-alone") {
      options.stopAlone = true;
      --i; // no value
    } else if (a == "--free-running") {
      options.freeRunning = true;
      --i; // no value
    } else
      ok = false;
    // Numbers must parse whole and be in range.
    if (ok && end && (*end != '\0' || end == value))
      ok = false;
    if (ok && (options.steps < 0 || options.epochs < 0 || options.lr <= 0 ||
               options.evalEvery < 0 || options.evalSamples < 0 ||
               options.stragglerFactor < 1.0 || options.delayMs < 0 ||
               options.computeMs < 0 || options.timeBudget < 0 ||
               options.evalTimes < 1))
      ok = false;
    if (!ok) {
      if (rank == 0)
        std::fprintf(
            stderr,
            "trainer: bad argument '%s'\nusage: trainer [--seed S] "
            "[--steps N | --epochs E] [--lr LR] [--eval-every N] "
            "[--eval-samples N] [--label L] [--log file.csv] [--data dir] "
            "[--straggler RANK:FACTOR] [--delay-ms M --delay-seed S] "
            "[--compute-ms C] [--time-budget S --eval-times K "
            "[--stop-alone]] "
            "[--free-running]\n",
            a.c_str());
      return false;
    }
    ++i;
  }
  return true;
}

/// What one evaluation logs.
struct Record {
  int step = 0;
  double epoch = 0, wallSeconds = 0, commSeconds = 0, elapsedSeconds = 0;
  double valueBytes = 0, indexBytes = 0; // per rank, since the start
  double trainLoss = 0, testLoss = 0, testAccuracy = 0;
  double replicaMean = 0, replicaMin = 0, replicaMax = 0, consensus = 0;
};

constexpr const char *kParameters[] = {"fc1_weight", "fc1_bias", "fc2_weight",
                                       "fc2_bias"};

/// Communication counters of this rank since the start, over every
/// collective of the step (gradients, gossip, the loss metric).
void communication(double &seconds, double &valueBytes, double &indexBytes) {
  seconds = valueBytes = indexBytes = 0.0;
  // Built once: the trainer reads the counters around every step.
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = {"loss"};
    for (const char *name : kParameters)
      for (const char *suffix : {"_grad", "_gossip", "_easgd"})
        all.push_back(std::string(name) + suffix);
    return all;
  }();
  for (const std::string &name : names) {
    gradcomm_op_stats stats{};
    check(gradcomm_stats_get(name.c_str(), &stats));
    seconds += stats.seconds;
    valueBytes += double(stats.value_bytes_sent);
    indexBytes += double(stats.index_bytes_sent);
  }
}

/// Collective: evaluates the averaged model (test set split over the
/// ranks) and every replica, and fills the evaluation fields of `record`.
void evaluateAll(Model &model, const Dataset &test, int samples, int rank,
                 int size, Record &record) {
  Model averaged = model;
  for (std::vector<float> *p : averaged.parameters()) {
    MPI_Allreduce(MPI_IN_PLACE, p->data(), static_cast<int>(p->size()),
                  MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (float &v : *p)
      v /= size;
  }
  int begin = int(int64_t(samples) * rank / size);
  int end = int(int64_t(samples) * (rank + 1) / size);
  Evaluation part = evaluate(averaged, test, begin, end);
  double sums[2] = {part.lossSum, part.correct};
  MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  record.testLoss = sums[0] / samples;
  record.testAccuracy = sums[1] / samples;

  // Replicas: identical for dense and ScaleCom (evaluated once), apart for
  // gossip (each rank evaluates its own on the whole test set).
  double distance = 0.0;
  for (std::vector<float> *p : model.parameters()) {
    double d = 0.0;
    check(gradcomm_consensus_distance_f32(p->data(),
                                          static_cast<int64_t>(p->size()), &d));
    distance += d;
  }
  record.consensus = distance;
  double accuracy = record.testAccuracy;
  if (distance > 0.0)
    accuracy = evaluate(model, test, 0, samples).correct / samples;
  double mean = 0.0, low = 0.0, high = 0.0;
  MPI_Allreduce(&accuracy, &mean, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&accuracy, &low, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&accuracy, &high, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  record.replicaMean = mean / size;
  record.replicaMin = low;
  record.replicaMax = high;
}

} // namespace

/// MPI errors in the trainer's own calls: the error text, then the end.
void reportMpiError(MPI_Comm *, int *code, ...) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(*code, text, &length);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "trainer: MPI error on rank %d: %s\n", rank, text);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
  // MPI_THREAD_MULTIPLE: the asynchronous steps' progress thread needs it.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  // The asynchronous ops' progress thread under this program's MPI: it
  // calls gradcomm_finalize before MPI_Finalize (docs/runtime.md, "The
  // finalize contract"). A value set by the user wins.
  setenv("GRADCOMM_ASYNC_PROGRESS", "1", /*overwrite=*/0);
  MPI_Errhandler errors;
  MPI_Comm_create_errhandler(reportMpiError, &errors);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, errors);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  Options options;
  if (!parseOptions(argc, argv, rank, options)) {
    MPI_Finalize();
    return 2;
  }

  Dataset train, test;
  if (!load(options.dir, "train", train) || !load(options.dir, "t10k", test)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "trainer: cannot read Fashion-MNIST from %s (Debian "
                   "package dataset-fashion-mnist, or set FASHION_MNIST_DIR)\n",
                   options.dir.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int globalBatch = kBatch * size;
  const int steps =
      options.epochs > 0
          ? int(std::ceil(options.epochs * train.count / globalBatch))
          : options.steps;
  const int samples = options.evalSamples > 0
                          ? std::min(options.evalSamples, test.count)
                          : test.count;

  // Same initial weights everywhere: rank 0 draws them, everyone receives.
  // The weights and the data order have their own seeds, derived from
  // --seed (nothing GradComm draws depends on them).
  Model model;
  if (rank == 0) {
    std::seed_seq weightSeed{options.seed, 1u};
    std::mt19937 rng(weightSeed);
    std::uniform_real_distribution<float> u1(-std::sqrt(6.0f / (kIn + kHidden)),
                                             std::sqrt(6.0f / (kIn + kHidden)));
    std::uniform_real_distribution<float> u2(
        -std::sqrt(6.0f / (kHidden + kClasses)),
        std::sqrt(6.0f / (kHidden + kClasses)));
    for (float &w : model.w1)
      w = u1(rng);
    for (float &w : model.w2)
      w = u2(rng);
  }
  for (std::vector<float> *p : model.parameters())
    MPI_Bcast(p->data(), static_cast<int>(p->size()), MPI_FLOAT, 0,
              MPI_COMM_WORLD);

  // Every rank shuffles the training set with the same seed and reads its
  // own slice of each global batch; a new permutation every epoch.
  std::vector<int> order(train.count);
  std::iota(order.begin(), order.end(), 0);
  std::seed_seq dataSeed{options.seed, 2u};
  std::mt19937 dataRng(dataSeed);
  const int stepsPerEpoch = std::max(1, train.count / globalBatch);

  FILE *log = nullptr;
  if (rank == 0 && !options.logPath.empty()) {
    log = std::fopen(options.logPath.c_str(), "w");
    if (!log) {
      std::fprintf(stderr, "trainer: cannot write %s\n",
                   options.logPath.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::fprintf(log, "label,seed,ranks,step,epoch,wall_s,comm_s,"
                      "value_bytes,index_bytes,train_loss,test_loss,"
                      "test_acc,replica_acc_mean,replica_acc_min,"
                      "replica_acc_max,consensus,elapsed_s\n");
  }

  // Stragglers and random delays: sleeps before a step, so the rank's
  // compute looks slower (the factor applies to --compute-ms, or else to
  // this rank's measured compute: its step time less its communication).
  std::mt19937 delayRng(options.delaySeed * 7919u + uint32_t(rank));
  std::exponential_distribution<double> delay(
      options.delayMs > 0 ? 1.0 / options.delayMs : 1.0);
  double computeEstimate = 0.0; // seconds per step, moving average
  auto slowDown = [&] {
    // With --compute-ms the straggler's factor applies to that simulated
    // compute alone: a measured estimate would also hold the time the rank
    // waited for locks or peers, which the factor would then feed back.
    const double compute =
        options.computeMs > 0 ? options.computeMs * 1e-3 : computeEstimate;
    double seconds = options.computeMs * 1e-3;
    if (rank == options.stragglerRank)
      seconds += (options.stragglerFactor - 1.0) * compute;
    if (options.delayMs > 0)
      seconds += delay(delayRng) * 1e-3;
    if (seconds > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  };

  std::vector<float> x(kBatch * kIn), y(kBatch * kClasses);
  std::vector<float> scale = {float(options.lr / globalBatch)};
  double wallSeconds = 0.0, lossSum = 0.0;
  int lossCount = 0;
  Record last;
  double trainingStart = 0.0;
  auto record = [&](int step) {
    Record r;
    r.step = step;
    r.epoch = double(step) * globalBatch / train.count;
    // Since the start, as the slowest rank sees it (the counters'
    // all-reduce below waits for it anyway).
    double elapsed = MPI_Wtime() - trainingStart;
    MPI_Allreduce(&elapsed, &r.elapsedSeconds, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    // Step and communication time are both means over ranks, so that
    // comm_s / wall_s is a fraction of the same (mean) rank's step.
    double counters[4];
    communication(counters[0], counters[1], counters[2]);
    counters[3] = wallSeconds;
    MPI_Allreduce(MPI_IN_PLACE, counters, 4, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    r.commSeconds = counters[0] / size;
    r.valueBytes = counters[1] / size;
    r.indexBytes = counters[2] / size;
    r.wallSeconds = counters[3] / size;
    r.trainLoss = lossCount ? lossSum / lossCount : NAN;
    lossSum = 0.0;
    lossCount = 0;
    evaluateAll(model, test, samples, rank, size, r);
    if (log) {
      std::fprintf(log,
                   "%s,%u,%d,%d,%.4f,%.4f,%.4f,%.0f,%.0f,%.6f,%.6f,%.6f,%.6f,"
                   "%.6f,%.6f,%.6g,%.4f\n",
                   options.label.c_str(), options.seed, size, r.step, r.epoch,
                   r.wallSeconds, r.commSeconds, r.valueBytes, r.indexBytes,
                   r.trainLoss, r.testLoss, r.testAccuracy, r.replicaMean,
                   r.replicaMin, r.replicaMax, r.consensus, r.elapsedSeconds);
      std::fflush(log);
    }
    last = r;
  };

  MPI_Barrier(MPI_COMM_WORLD);
  trainingStart = MPI_Wtime();
  auto trainStep = [&](int step) {
    if (step % stepsPerEpoch == 0)
      std::shuffle(order.begin(), order.end(), dataRng);
    const size_t base = size_t(step % stepsPerEpoch) * globalBatch;
    for (int b = 0; b < kBatch; ++b) {
      int sample = order[(base + rank * kBatch + b) % train.count];
      std::copy(&train.images[size_t(sample) * kIn],
                &train.images[size_t(sample) * kIn] + kIn, &x[b * kIn]);
      std::fill(&y[b * kClasses], &y[b * kClasses] + kClasses, 0.0f);
      y[b * kClasses + train.labels[sample]] = 1.0f;
    }
    gradcomm_memref_f32_2d w1 = view2d(model.w1, kIn, kHidden),
                           w2 = view2d(model.w2, kHidden, kClasses),
                           xd = view2d(x, kBatch, kIn),
                           yd = view2d(y, kBatch, kClasses);
    gradcomm_memref_f32_1d b1 = view1d(model.b1), b2 = view1d(model.b2);
    gradcomm_memref_f32_0d lr = {scale.data(), scale.data(), 0};
    step_results r;
    if (!options.freeRunning)
      MPI_Barrier(MPI_COMM_WORLD);
    slowDown();
    double commBefore = 0, unused1 = 0, unused2 = 0;
    communication(commBefore, unused1, unused2);
    double start = MPI_Wtime();
    _mlir_ciface_step(&r, &w1, &b1, &w2, &b2, &xd, &yd, &lr);
    double stepSeconds = MPI_Wtime() - start;
    wallSeconds += stepSeconds;
    double commAfter = 0;
    communication(commAfter, unused1, unused2);
    const double compute =
        std::max(0.0, stepSeconds - (commAfter - commBefore));
    computeEstimate =
        step == 0 ? compute : 0.9 * computeEstimate + 0.1 * compute;
    take(r.r0, model.w1);
    take(r.r1, model.b1);
    take(r.r2, model.w2);
    take(r.r3, model.b2);
    lossSum += r.r4.aligned[r.r4.offset] / globalBatch;
    ++lossCount;
    gradcomm_free_buffer(r.r4.allocated);
  };

  int stepsRun = steps;
  if (options.timeBudget > 0) {
    // Time-bounded (the gossip study): train for the budget and evaluate at
    // evenly spaced times, so a method whose fast ranks do not wait for a
    // straggler takes more steps on them. Synchronous strategies decide to
    // stop or evaluate together (one small all-reduce per step: their
    // collectives need every rank at the same step); asynchronous ones by
    // their own clock, meeting only in the evaluation.
    const int evaluations = std::max(1, options.evalTimes);
    int next = 1, step = 0;
    while (true) {
      int due = MPI_Wtime() - trainingStart >=
                options.timeBudget * next / evaluations;
      if (!options.stopAlone)
        MPI_Allreduce(MPI_IN_PLACE, &due, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (due) {
        record(step);
        if (next++ == evaluations)
          break;
      }
      trainStep(step++);
    }
    stepsRun = step;
  } else {
    for (int step = 0; step < steps; ++step) {
      trainStep(step);
      if (options.evalEvery > 0 && (step + 1) % options.evalEvery == 0 &&
          step + 1 < steps)
        record(step + 1);
    }
    record(steps);
  }
  if (log)
    std::fclose(log);

  if (rank == 0)
    std::printf("summary label=%s seed=%u steps=%d epochs=%.2f loss=%.4f "
                "test_loss=%.4f acc_averaged=%.4f acc_replicas=%.4f "
                "value_bytes_per_step=%.0f index_bytes_per_step=%.0f "
                "ms_per_step=%.2f comm_ms_per_step=%.2f "
                "consensus_distance=%.3g elapsed_s=%.2f\n",
                options.label.c_str(), options.seed, stepsRun, last.epoch,
                last.trainLoss, last.testLoss, last.testAccuracy,
                last.replicaMean, last.valueBytes / std::max(1, stepsRun),
                last.indexBytes / std::max(1, stepsRun),
                1e3 * last.wallSeconds / std::max(1, stepsRun),
                1e3 * last.commSeconds / std::max(1, stepsRun), last.consensus,
                last.elapsedSeconds);
  gradcomm_finalize();
  MPI_Finalize();
  return 0;
}
