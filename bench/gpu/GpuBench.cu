//===- GpuBench.cu - CUDA kernel bandwidth, selection, NCCL overhead ------===//
//
// Part of the GradComm project.
//
// docs/design/benchmarks.md, one GPU, on one GPU: each kernel as a fraction of
// a device-to-device copy measured in the same run, the exact selection's time
// (bench/gpu/topk.py times torch.topk on the same data), and the per-call
// overhead of a one-rank NCCL all-reduce. Writes CSV to argv[1]; argv[2]
// optionally lists the sizes (log2, comma-separated). Not a test.
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"
#include "CudaTestUtil.h"

#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(expr)                                                       \
  do {                                                                         \
    cudaError_t gradcommCudaError = (expr);                                    \
    if (gradcommCudaError != cudaSuccess) {                                    \
      std::fprintf(stderr, "%s: %s\n", #expr,                                  \
                   cudaGetErrorString(gradcommCudaError));                     \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

/// Median of `repetitions` timings (ms) of `body` with CUDA events.
template <typename Body> double timeMs(Body body, int repetitions = 11) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  body(); // warm-up
  std::vector<float> samples;
  for (int r = 0; r < repetitions; ++r) {
    cudaEventRecord(start);
    body();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    samples.push_back(ms);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  if (int rc = requireCudaDevice("GPU benchmark"))
    return rc;
  std::string out = argc > 1 ? argv[1] : "gpu-out";
  // argv[2]: the sizes as comma-separated powers of two (default 20,24,28).
  std::vector<int64_t> sizes;
  for (const char *p = argc > 2 ? argv[2] : "20,24,28"; *p;) {
    char *end = nullptr;
    long log2 = std::strtol(p, &end, 10);
    if (end == p || log2 < 10 || log2 > 30) {
      std::fprintf(stderr, "sizes: expected powers of two 10..30, got '%s'\n",
                   p);
      return 2;
    }
    sizes.push_back(int64_t(1) << log2);
    p = *end == ',' ? end + 1 : end;
  }
  std::ofstream kernels(out + "/kernels.csv");
  kernels << "n,kernel,ms,gbytes_per_s,fraction_of_copy\n";
  for (int64_t n : sizes) {
    const int64_t k = (n + 99) / 100;
    std::vector<float> host(n);
    uint64_t x = 1;
    for (int64_t i = 0; i < n; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      host[i] = float(int64_t(x >> 40) - (1 << 23)) / float(1 << 23);
    }
    float *m, *g, *outBuffer, *values, *copy;
    int64_t *indices;
    uint32_t *marks;
    CHECK_CUDA(cudaMalloc(&m, 4 * n));
    CHECK_CUDA(cudaMalloc(&g, 4 * n));
    CHECK_CUDA(cudaMalloc(&outBuffer, 4 * n));
    CHECK_CUDA(cudaMalloc(&copy, 4 * n));
    CHECK_CUDA(cudaMalloc(&values, 4 * k));
    CHECK_CUDA(cudaMalloc(&indices, 8 * k));
    CHECK_CUDA(cudaMalloc(&marks, 4 * n));
    CHECK_CUDA(cudaMemset(marks, 0, 4 * n));
    CHECK_CUDA(cudaMemcpy(g, host.data(), 4 * n, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(m, 0, 4 * n));

    // Bytes as each kernel really moves them (DRAM reads + writes, marks
    // and the k-sized gathers included), so the bandwidth is comparable
    // with the copy's.
    const double copyBytes = 8.0 * n;
    double copyMs = timeMs(
        [&] { cudaMemcpyAsync(copy, g, 4 * n, cudaMemcpyDeviceToDevice); });
    double copyBw = copyBytes / (copyMs * 1e6);
    auto row = [&](const char *name, double ms, double bytes) {
      double bw = bytes / (ms * 1e6);
      kernels << n << "," << name << "," << ms << "," << bw << ","
              << bw / copyBw << "\n";
    };
    row("d2d_copy", copyMs, copyBytes);
    // Reads m, g; writes m, out; per chunk of 100 one index and one value.
    const int64_t chunks = (n + 99) / 100;
    row("fused_chunk", timeMs([&] {
          gradcomm::cuda::selectChunk(m, g, n, 100, indices, 0.5f, values,
                                      outBuffer, true, nullptr);
        }),
        16.0 * n + 12.0 * chunks);
    // Chunks of 1000: the block-per-chunk kernel (chunks above 256).
    row("fused_chunk_1000", timeMs([&] {
          gradcomm::cuda::selectChunk(m, g, n, 1000, indices, 0.5f, values,
                                      outBuffer, true, nullptr);
        }),
        16.0 * n + 12.0 * ((n + 999) / 1000));
    // Mark + gather (indices, m[I], g[I] read; values, marks[I] written),
    // then the update (m, g, marks read; m, out written).
    uint32_t stamp = 1;
    row("fused_update", timeMs([&] {
          gradcomm::cuda::gatherAndUpdate(m, g, n, indices, k, 0.5f, values,
                                          outBuffer, marks, ++stamp, nullptr);
        }),
        20.0 * n + 24.0 * k);
    // Keys and first histogram (m, g read; keys written), three more
    // histogram passes over the keys, the count and write passes over the
    // keys, k indices written.
    gradcomm::cuda::SelectScratch scratch;
    row("exact_select", timeMs([&] {
          gradcomm::cuda::selectExact(m, g, n, k, indices, scratch, nullptr);
        }),
        12.0 * n + 3 * 4.0 * n + 4.0 * n + 4.0 * n + 8.0 * k);
    // The same on a sparse gradient: one non-zero per 1000 elements, fewer
    // than k (the CPU path's hard case, issue 11).
    CHECK_CUDA(cudaMemset(outBuffer, 0, 4 * n));
    CHECK_CUDA(cudaMemcpy2D(outBuffer, 4000, host.data(), 4, 4, n / 1000,
                            cudaMemcpyHostToDevice));
    row("exact_select_sparse", timeMs([&] {
          gradcomm::cuda::selectExact(m, outBuffer, n, k, indices, scratch,
                                      nullptr);
        }),
        12.0 * n + 3 * 4.0 * n + 4.0 * n + 4.0 * n + 8.0 * k);
    // The 16-bit wire's conversions (#35): 4 bytes read and 2 written per
    // value one way, 2 read and 4 written the other.
    uint16_t *wire = reinterpret_cast<uint16_t *>(copy);
    for (bool bfloat16 : {true, false}) {
      row(bfloat16 ? "narrow_bf16" : "narrow_f16", timeMs([&] {
            gradcomm::cuda::narrowValues(g, wire, n, bfloat16, nullptr);
          }),
          6.0 * n);
      row(bfloat16 ? "widen_bf16" : "widen_f16", timeMs([&] {
            gradcomm::cuda::widenValues(wire, outBuffer, n, bfloat16, nullptr);
          }),
          6.0 * n);
    }
    // The recipe's parts (#34): the velocity (u, g read; next written), its
    // commit (next read, u written; k zeros), the clip (g read twice: the
    // norm, then the scaled copy written).
    row("velocity", timeMs([&] {
          gradcomm::cuda::velocityStep(m, g, outBuffer, nullptr, n, 0.9f,
                                       nullptr);
        }),
        12.0 * n);
    row("commit_velocity", timeMs([&] {
          gradcomm::cuda::commitVelocity(m, outBuffer, n, indices, k, nullptr);
        }),
        8.0 * n + 12.0 * k);
    double *norm = nullptr;
    CHECK_CUDA(cudaMalloc(&norm, sizeof(double) * gradcomm::cuda::kNormBlocks));
    row("clip", timeMs([&] {
          gradcomm::cuda::clipToNorm(g, outBuffer, n, 0.5f, norm, nullptr);
        }),
        12.0 * n);
    cudaFree(norm);
    // The same data for torch.topk (m is zero, so |m + g| = |g|).
    if (n == (int64_t(1) << 24)) {
      std::ofstream raw(out + "/topk_input.f32", std::ios::binary);
      raw.write(reinterpret_cast<const char *>(host.data()), 4 * n);
    }
    cudaFree(m);
    cudaFree(g);
    cudaFree(outBuffer);
    cudaFree(copy);
    cudaFree(values);
    cudaFree(indices);
    cudaFree(marks);
  }

  // One-rank NCCL: the per-call overhead of a tiny all-reduce.
  std::ofstream nccl(out + "/nccl.csv");
  nccl << "count,us_per_call\n";
  ncclComm_t comm;
  int device = 0;
  if (ncclCommInitAll(&comm, 1, &device) == ncclSuccess) {
    float *buffer;
    CHECK_CUDA(cudaMalloc(&buffer, 4 << 20));
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    for (size_t count : {size_t(1), size_t(1024), size_t(1) << 20}) {
      double ms = timeMs([&] {
        for (int i = 0; i < 100; ++i)
          ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm,
                        stream);
        cudaStreamSynchronize(stream);
      });
      nccl << count << "," << ms * 10.0 << "\n";
    }
    ncclCommDestroy(comm);
  } else {
    std::fprintf(stderr, "ncclCommInitAll failed: no NCCL figures\n");
    return 1;
  }
  std::printf("wrote %s/kernels.csv and %s/nccl.csv\n", out.c_str(),
              out.c_str());
  return 0;
}
