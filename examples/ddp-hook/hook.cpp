//===- hook.cpp - Calling a compiled communication-only step --------------===//
//
// Part of the GradComm project.
//
// The way a trainer uses GradComm as a DDP communication hook: after its
// backward pass it hands the gradient buffers to the compiled `hook` (here
// host buffers on the CPU backend; with gradcomm_set_backend(CUDA), device
// pointers, unchanged code). The bias gradient comes back averaged in place;
// the ScaleCom-compressed weight gradient in a buffer the runtime allocated
// (released with gradcomm_free_buffer). Checks both and exits non-zero on a
// mismatch.
//
//===----------------------------------------------------------------------===//

#include "step.h"

#include "gradcomm/runtime.h"
#include "gradcomm/runtime_memref.h"

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t rows = 1024, cols = 256, n = rows * cols;
  const int64_t k = (n + 99) / 100; // --ratio=100

  int failures = 0;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> gw(n), gb(cols);
    for (int64_t i = 0; i < n; ++i)
      gw[i] = float((i * 7 + rank * 13 + step) % 101) - 50.0f;
    for (int64_t j = 0; j < cols; ++j)
      gb[j] = float(rank + j);
    gradcomm_memref_f32_2d w = {
        gw.data(), gw.data(), 0, {rows, cols}, {cols, 1}};
    gradcomm_memref_f32_1d b = {gb.data(), gb.data(), 0, {cols}, {1}};
    gradcomm_memref_f32_2d reduced;
    _mlir_ciface_hook(&reduced, &w, &b);

    // The bias: averaged in place (small integers: exact).
    for (int64_t j = 0; j < cols; ++j) {
      float expected = 0.0f;
      for (int r = 0; r < size; ++r)
        expected += float(r + j);
      if (gb[j] != expected / size)
        ++failures;
    }
    // The weight: k nonzero entries (the leader's indices), the same on
    // every rank.
    const float *out = reduced.aligned + reduced.offset;
    int64_t nonzero = 0;
    unsigned long long hash = 1469598103934665603ull;
    for (int64_t i = 0; i < n; ++i) {
      nonzero += out[i] != 0.0f;
      unsigned int bits;
      std::memcpy(&bits, &out[i], 4);
      hash = (hash ^ bits) * 1099511628211ull;
    }
    unsigned long long lo = 0, hi = 0;
    MPI_Allreduce(&hash, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN,
                  MPI_COMM_WORLD);
    MPI_Allreduce(&hash, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                  MPI_COMM_WORLD);
    if (nonzero > k || nonzero == 0 || lo != hi)
      ++failures;
    gradcomm_free_buffer(reduced.allocated);
  }
  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("communication hook: %s\n", any ? "MISMATCH" : "ok");
  gradcomm_finalize();
  MPI_Finalize();
  return any ? 1 : 0;
}
