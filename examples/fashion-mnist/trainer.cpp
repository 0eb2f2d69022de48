//===- trainer.cpp - Fashion-MNIST MLP trained with a compiled step -------===//
//
// Part of the GradComm project.
//
// The main job (docs/design/architecture.md section 8): a 784-128-10 MLP on
// Fashion-MNIST, data-parallel over the MPI ranks, its training step compiled
// by gradcomm-compile with one communication strategy. Weights start equal
// on every rank (rank 0's, broadcast); each rank reads its own disjoint
// slice of every global batch. At the end the test accuracy of the averaged
// model and of the replicas is reported (they differ only for gossip).
//
//   mpiexec -n 4 ./fashion-mnist-scalecom --steps 300 --log loss.csv
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
#include <numeric>
#include <random>
#include <string>
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

/// Test accuracy of `model` (host forward pass).
double accuracy(Model &model, const Dataset &test) {
  int correct = 0;
  std::vector<float> hidden(kHidden);
  for (int s = 0; s < test.count; ++s) {
    const float *x = &test.images[size_t(s) * kIn];
    for (int j = 0; j < kHidden; ++j) {
      float acc = model.b1[j];
      for (int i = 0; i < kIn; ++i)
        acc += x[i] * model.w1[i * kHidden + j];
      hidden[j] = std::max(acc, 0.0f);
    }
    int best = 0;
    float bestLogit = -INFINITY;
    for (int c = 0; c < kClasses; ++c) {
      float acc = model.b2[c];
      for (int j = 0; j < kHidden; ++j)
        acc += hidden[j] * model.w2[j * kClasses + c];
      if (acc > bestLogit) {
        bestLogit = acc;
        best = c;
      }
    }
    correct += best == test.labels[s];
  }
  return double(correct) / test.count;
}

void check(gradcomm_status status) {
  if (status != GRADCOMM_OK) {
    std::fprintf(stderr, "%s\n", gradcomm_last_error());
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

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int steps = 300;
  std::string label = "run", logPath;
  const char *dirEnv = std::getenv("FASHION_MNIST_DIR");
  std::string dir = dirEnv ? dirEnv : "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (a == "--label" && i + 1 < argc)
      label = argv[++i];
    else if (a == "--log" && i + 1 < argc)
      logPath = argv[++i];
    else if (a == "--data" && i + 1 < argc)
      dir = argv[++i];
    else {
      if (rank == 0)
        std::fprintf(stderr,
                     "usage: trainer [--steps N] [--label L] [--log file.csv] "
                     "[--data dir]\n");
      MPI_Finalize();
      return 2;
    }
  }

  Dataset train, test;
  if (!load(dir, "train", train) || !load(dir, "t10k", test)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "trainer: cannot read Fashion-MNIST from %s (Debian "
                   "package dataset-fashion-mnist, or set FASHION_MNIST_DIR)\n",
                   dir.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  // Same initial weights everywhere: rank 0 draws them, everyone receives.
  Model model;
  if (rank == 0) {
    std::mt19937 rng(42);
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

  // Every rank shuffles the training set with the same seed (the data RNG,
  // separate from anything GradComm draws) and reads its own slice of each
  // global batch.
  std::vector<int> order(train.count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 dataRng(7);
  std::shuffle(order.begin(), order.end(), dataRng);
  const int globalBatch = kBatch * size;

  FILE *log = nullptr;
  if (rank == 0 && !logPath.empty())
    log = std::fopen(logPath.c_str(), "w");
  if (log)
    std::fprintf(log, "step,loss\n");

  std::vector<float> x(kBatch * kIn), y(kBatch * kClasses);
  double seconds = 0.0, recentLoss = 0.0;
  int recent = 0;
  for (int step = 0; step < steps; ++step) {
    for (int b = 0; b < kBatch; ++b) {
      int sample =
          order[(size_t(step) * globalBatch + rank * kBatch + b) % train.count];
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
    step_results r;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    _mlir_ciface_step(&r, &w1, &b1, &w2, &b2, &xd, &yd);
    seconds += MPI_Wtime() - start;
    take(r.r0, model.w1);
    take(r.r1, model.b1);
    take(r.r2, model.w2);
    take(r.r3, model.b2);
    float loss = r.r4.aligned[r.r4.offset] / globalBatch;
    gradcomm_free_buffer(r.r4.allocated);
    if (log)
      std::fprintf(log, "%d,%.6f\n", step, loss);
    if (step >= steps - 20) {
      recentLoss += loss;
      ++recent;
    }
  }
  if (log)
    std::fclose(log);

  // Accuracy of this replica, of the mean replica accuracy, and of the
  // averaged model.
  double replicaAccuracy = accuracy(model, test), meanReplicaAccuracy = 0.0;
  MPI_Allreduce(&replicaAccuracy, &meanReplicaAccuracy, 1, MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  meanReplicaAccuracy /= size;
  Model averaged = model;
  for (std::vector<float> *p : averaged.parameters()) {
    MPI_Allreduce(MPI_IN_PLACE, p->data(), static_cast<int>(p->size()),
                  MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (float &v : *p)
      v /= size;
  }
  double averagedAccuracy = rank == 0 ? accuracy(averaged, test) : 0.0;
  double distance = 0.0;
  check(gradcomm_consensus_distance_f32(
      model.w1.data(), static_cast<int64_t>(model.w1.size()), &distance));

  // Bytes this rank sent per step, over every parameter's communication.
  uint64_t valueBytes = 0, indexBytes = 0;
  for (const char *name : {"fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"})
    for (const char *suffix : {"_grad", "_gossip"}) {
      gradcomm_op_stats stats{};
      check(gradcomm_stats_get((std::string(name) + suffix).c_str(), &stats));
      valueBytes += stats.value_bytes_sent;
      indexBytes += stats.index_bytes_sent;
    }
  if (rank == 0) {
    std::printf("summary label=%s steps=%d loss=%.4f acc_averaged=%.4f "
                "acc_replicas=%.4f value_bytes_per_step=%.0f "
                "index_bytes_per_step=%.0f ms_per_step=%.2f "
                "consensus_distance=%.3g\n",
                label.c_str(), steps, recent ? recentLoss / recent : 0.0,
                averagedAccuracy, meanReplicaAccuracy,
                double(valueBytes) / std::max(1, steps),
                double(indexBytes) / std::max(1, steps),
                1e3 * seconds / std::max(1, steps), distance);
  }
  gradcomm_finalize();
  MPI_Finalize();
  return 0;
}
