//===- mlp_bench.cpp - Compiled MLP step vs the same step in plain C++ ----===//
//
// Part of the GradComm project.
//
// One SGD step of the Fashion-MNIST MLP (examples/fashion-mnist/
// step.mlir.in, one rank, batch 32) compiled by gradcomm-compile, against
// the same math written as plain loops in the order a C programmer would
// choose, built with -O3 -march=native. Reports thread CPU time per step of
// each and their ratio, measured alternately in one process
// (docs/design/benchmarks.md), and the largest difference between the two
// results. bench/compile/step_speed.sh builds and runs it.
//
//===----------------------------------------------------------------------===//

#include "step.h"

#include "gradcomm/runtime.h"
#include "gradcomm/runtime_memref.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

namespace {

constexpr int kBatch = 32, kIn = 784, kHidden = 128, kClasses = 10;

double threadSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

struct Parameters {
  std::vector<float> w1 = std::vector<float>(kIn * kHidden);
  std::vector<float> b1 = std::vector<float>(kHidden);
  std::vector<float> w2 = std::vector<float>(kHidden * kClasses);
  std::vector<float> b2 = std::vector<float>(kClasses);
};

/// The step of step.mlir.in in plain loops: forward, softmax
/// cross-entropy, backward, p -= scale * g.
float referenceStep(Parameters &p, const std::vector<float> &x,
                    const std::vector<float> &y, float scale) {
  static std::vector<float> pre(kBatch * kHidden), h(kBatch * kHidden),
      prob(kBatch * kClasses), d(kBatch * kClasses), dh(kBatch * kHidden),
      gw1(kIn * kHidden), gb1(kHidden), gw2(kHidden * kClasses), gb2(kClasses);
  for (int m = 0; m < kBatch; ++m) {
    float *row = &pre[m * kHidden];
    std::fill(row, row + kHidden, 0.0f);
    for (int k = 0; k < kIn; ++k) {
      const float a = x[m * kIn + k];
      const float *w = &p.w1[k * kHidden];
      for (int n = 0; n < kHidden; ++n)
        row[n] += a * w[n];
    }
    for (int n = 0; n < kHidden; ++n) {
      row[n] += p.b1[n];
      h[m * kHidden + n] = std::max(row[n], 0.0f);
    }
  }
  float loss = 0.0f;
  for (int m = 0; m < kBatch; ++m) {
    float logits[kClasses] = {};
    for (int k = 0; k < kHidden; ++k)
      for (int n = 0; n < kClasses; ++n)
        logits[n] += h[m * kHidden + k] * p.w2[k * kClasses + n];
    float top = -INFINITY;
    for (int n = 0; n < kClasses; ++n) {
      logits[n] += p.b2[n];
      top = std::max(top, logits[n]);
    }
    float sum = 0.0f;
    for (int n = 0; n < kClasses; ++n) {
      logits[n] = std::exp(logits[n] - top);
      sum += logits[n];
    }
    for (int n = 0; n < kClasses; ++n) {
      float q = logits[n] / sum;
      prob[m * kClasses + n] = q;
      loss -= y[m * kClasses + n] * std::log(q);
      d[m * kClasses + n] = q - y[m * kClasses + n];
    }
  }
  std::fill(gw2.begin(), gw2.end(), 0.0f);
  std::fill(gb2.begin(), gb2.end(), 0.0f);
  for (int m = 0; m < kBatch; ++m)
    for (int k = 0; k < kHidden; ++k)
      for (int n = 0; n < kClasses; ++n)
        gw2[k * kClasses + n] += h[m * kHidden + k] * d[m * kClasses + n];
  for (int m = 0; m < kBatch; ++m)
    for (int n = 0; n < kClasses; ++n)
      gb2[n] += d[m * kClasses + n];
  for (int m = 0; m < kBatch; ++m)
    for (int k = 0; k < kHidden; ++k) {
      float acc = 0.0f;
      for (int n = 0; n < kClasses; ++n)
        acc += d[m * kClasses + n] * p.w2[k * kClasses + n];
      dh[m * kHidden + k] = pre[m * kHidden + k] > 0.0f ? acc : 0.0f;
    }
  std::fill(gw1.begin(), gw1.end(), 0.0f);
  std::fill(gb1.begin(), gb1.end(), 0.0f);
  for (int m = 0; m < kBatch; ++m)
    for (int k = 0; k < kIn; ++k) {
      const float a = x[m * kIn + k];
      float *g = &gw1[k * kHidden];
      const float *e = &dh[m * kHidden];
      for (int n = 0; n < kHidden; ++n)
        g[n] += a * e[n];
    }
  for (int m = 0; m < kBatch; ++m)
    for (int n = 0; n < kHidden; ++n)
      gb1[n] += dh[m * kHidden + n];
  auto update = [scale](std::vector<float> &w, const std::vector<float> &g) {
    for (size_t i = 0; i < w.size(); ++i)
      w[i] -= scale * g[i];
  };
  update(p.w1, gw1);
  update(p.b1, gb1);
  update(p.w2, gw2);
  update(p.b2, gb2);
  return loss;
}

template <typename Memref>
void take(const Memref &result, std::vector<float> &into) {
  const float *data = result.aligned + result.offset;
  std::copy(data, data + into.size(), into.begin());
  gradcomm_free_buffer(result.allocated);
}

float compiledStep(Parameters &p, std::vector<float> &x, std::vector<float> &y,
                   float scale) {
  gradcomm_memref_f32_2d w1 = {
      p.w1.data(), p.w1.data(), 0, {kIn, kHidden}, {kHidden, 1}};
  gradcomm_memref_f32_1d b1 = {p.b1.data(), p.b1.data(), 0, {kHidden}, {1}};
  gradcomm_memref_f32_2d w2 = {
      p.w2.data(), p.w2.data(), 0, {kHidden, kClasses}, {kClasses, 1}};
  gradcomm_memref_f32_1d b2 = {p.b2.data(), p.b2.data(), 0, {kClasses}, {1}};
  gradcomm_memref_f32_2d xd = {x.data(), x.data(), 0, {kBatch, kIn}, {kIn, 1}};
  gradcomm_memref_f32_2d yd = {
      y.data(), y.data(), 0, {kBatch, kClasses}, {kClasses, 1}};
  gradcomm_memref_f32_0d lr = {&scale, &scale, 0};
  step_results r;
  _mlir_ciface_step(&r, &w1, &b1, &w2, &b2, &xd, &yd, &lr);
  take(r.r0, p.w1);
  take(r.r1, p.b1);
  take(r.r2, p.w2);
  take(r.r3, p.b2);
  float loss = r.r4.aligned[r.r4.offset];
  gradcomm_free_buffer(r.r4.allocated);
  return loss;
}

/// max |a - b| / max |b|: the two differ only by rounding (the C++
/// compiler may contract a * b + c into fused multiply-adds).
double normalizedDifference(const std::vector<float> &a,
                            const std::vector<float> &b) {
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return worst / std::max(scale, 1e-30);
}

} // namespace

int main(int argc, char **argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-0.05f, 0.05f);
  Parameters compiled, reference;
  for (auto *v : {&compiled.w1, &compiled.w2})
    for (float &w : *v)
      w = uniform(rng);
  reference = compiled;
  std::vector<float> x(kBatch * kIn), y(kBatch * kClasses, 0.0f);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (float &v : x)
    v = pixel(rng);
  for (int m = 0; m < kBatch; ++m)
    y[m * kClasses + m % kClasses] = 1.0f;
  const float scale = 0.1f / kBatch;

  // Warm up both (first-touch allocation, runtime initialization).
  compiledStep(compiled, x, y, scale);
  referenceStep(reference, x, y, scale);
  double compiledTime = 0.0, referenceTime = 0.0;
  for (int s = 0; s < steps; ++s) {
    double t0 = threadSeconds();
    compiledStep(compiled, x, y, scale);
    double t1 = threadSeconds();
    referenceStep(reference, x, y, scale);
    double t2 = threadSeconds();
    compiledTime += t1 - t0;
    referenceTime += t2 - t1;
  }
  std::printf("compiled step: %.3f ms CPU\n", 1e3 * compiledTime / steps);
  std::printf("plain C++ -O3 -march=native: %.3f ms CPU\n",
              1e3 * referenceTime / steps);
  std::printf("ratio compiled / plain: %.2f\n", compiledTime / referenceTime);
  std::printf("max |w1 - w1_plain| / max |w1_plain| after %d steps: %.2g\n",
              steps + 1, normalizedDifference(compiled.w1, reference.w1));
  gradcomm_finalize();
  return 0;
}
