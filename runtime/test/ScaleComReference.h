//===- ScaleComReference.h - ScaleCom for n simulated workers ---*- C++ -*-===//
//
// Part of the GradComm project.
//
// Every rank can compute every rank's gradient (TestUtil.h), so the tests
// simulate all n workers of docs/design/architecture.md section 2 in each
// process and compare the runtime's result on this rank with it.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_TEST_SCALECOMREFERENCE_H
#define GRADCOMM_RUNTIME_TEST_SCALECOMREFERENCE_H

#include "gradcomm/runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace gradcomm::test {

/// ScaleCom for n simulated workers, written from docs/design/architecture.md
/// section 2, with a full sort for the exact selection.
struct Reference {
  int n;
  int64_t count, k;
  gradcomm_selection selection;
  int64_t chunkSize;
  float beta;
  gradcomm_reduction reduction;
  std::vector<std::vector<float>> memory;
  uint64_t step = 0;

  Reference(int n, int64_t count, int64_t k, gradcomm_selection selection,
            int64_t chunkSize, float beta, gradcomm_reduction reduction)
      : n(n), count(count), k(k), selection(selection), chunkSize(chunkSize),
        beta(beta), reduction(reduction),
        memory(n, std::vector<float>(count, 0.0f)) {}

  std::vector<int64_t> select(const std::vector<float> &p) const {
    std::vector<int64_t> indices;
    if (selection == GRADCOMM_SELECT_CHUNK) {
      for (int64_t begin = 0; begin < count; begin += chunkSize) {
        int64_t best = begin;
        for (int64_t i = begin; i < std::min(count, begin + chunkSize); ++i)
          if (std::fabs(p[i]) > std::fabs(p[best]))
            best = i;
        indices.push_back(best);
      }
      return indices;
    }
    indices.resize(count);
    std::iota(indices.begin(), indices.end(), 0);
    std::stable_sort(indices.begin(), indices.end(), [&](int64_t a, int64_t b) {
      return std::fabs(p[a]) > std::fabs(p[b]);
    });
    indices.resize(k);
    std::sort(indices.begin(), indices.end());
    return indices;
  }

  /// One step; returns the decompressed, reduced gradient.
  std::vector<float> run(const std::vector<std::vector<float>> &grads) {
    std::vector<std::vector<float>> p(n, std::vector<float>(count));
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        p[r][i] = memory[r][i] + grads[r][i];
    std::vector<int64_t> indices = select(p[step % n]);
    std::vector<float> out(count, 0.0f);
    for (int64_t index : indices) {
      float sum = 0.0f;
      for (int r = 0; r < n; ++r)
        sum += p[r][index];
      out[index] = reduction == GRADCOMM_REDUCE_AVERAGE
                       ? sum / static_cast<float>(n)
                       : sum;
    }
    // Elementwise form of the low-pass memory update.
    std::vector<char> selected(count, 0);
    for (int64_t index : indices)
      selected[index] = 1;
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        memory[r][i] = selected[i] ? (1.0f - beta) * memory[r][i]
                                   : memory[r][i] + beta * grads[r][i];
    ++step;
    return out;
  }
};

} // namespace gradcomm::test

#endif // GRADCOMM_RUNTIME_TEST_SCALECOMREFERENCE_H
