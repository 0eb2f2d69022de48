//===- CudaBackendTest.cpp - The CUDA backend against the CPU backend -----===//
//
// Part of the GradComm project.
//
// One rank (one-rank NCCL): the CUDA backend's fused ScaleCom step, dense
// all-reduce (also on a 16-bit wire, with the recipe), reduce-scatters and
// gossip against the CPU backend on the same data, bit for bit, and a
// checkpoint written by one backend restored by the other.
// Needs a GPU: on a machine without one the program exits 77 (ctest:
// skipped); with one that CUDA cannot use it fails (CudaTestUtil.h).
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "MiniTest.h"
#include "TestCommon.h"
#include "gradcomm/runtime_cuda.h"
#include "gradcomm/runtime_memref.h"

#include <cuda_runtime.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

using namespace gradcomm::test;

namespace {

/// Runs `steps` ScaleCom steps on the current backend, returning outputs.
std::vector<std::vector<float>> run(const char *state, bool device,
                                    uint64_t first, uint64_t last,
                                    gradcomm_selection selection) {
  const int64_t n = 100000, chunk = 50,
                k = selection == GRADCOMM_SELECT_CHUNK ? (n + chunk - 1) / chunk
                                                       : 1000;
  std::vector<std::vector<float>> outs;
  for (uint64_t step = first; step < last; ++step) {
    std::vector<float> grad = gradient(3, 0, step, n), out(n);
    if (device) {
      float *g = toDevice(grad), *o = toDevice(out);
      EXPECT_OK(gradcomm_scalecom_f32(state, g, o, n, k, selection, chunk, 0.5f,
                                      GRADCOMM_REDUCE_AVERAGE));
      out = toHost(o, n);
      cudaFree(g);
      cudaFree(o);
    } else {
      EXPECT_OK(gradcomm_scalecom_f32(state, grad.data(), out.data(), n, k,
                                      selection, chunk, 0.5f,
                                      GRADCOMM_REDUCE_AVERAGE));
    }
    outs.push_back(out);
  }
  return outs;
}

TEST(CudaBackend, ScaleComMatchesCpuAndCheckpointsCrossBackends) {
  for (gradcomm_selection selection :
       {GRADCOMM_SELECT_EXACT, GRADCOMM_SELECT_CHUNK}) {
    ASSERT_OK(gradcomm_finalize());
    auto cpu = run("w", false, 0, 10, selection);
    std::string path = ::testing::TempDir() + "gradcomm_cross_backend";
    ASSERT_OK(gradcomm_finalize());
    run("w", false, 0, 5, selection);
    ASSERT_OK(gradcomm_state_save(path.c_str()));
    ASSERT_OK(gradcomm_finalize());
    ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
    ASSERT_OK(gradcomm_state_restore(path.c_str()));
    auto cuda = run("w", true, 5, 10, selection);
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(cuda[i], cpu[5 + i]) << "step " << 5 + i;
    // And back: the CUDA backend's checkpoint restores on the CPU.
    ASSERT_OK(gradcomm_state_save(path.c_str()));
    std::vector<float> deviceMemory(100000);
    ASSERT_OK(gradcomm_state_read("w", deviceMemory.data(), 100000));
    ASSERT_OK(gradcomm_finalize());
    ASSERT_OK(gradcomm_state_restore(path.c_str()));
    std::vector<float> hostMemory(100000);
    ASSERT_OK(gradcomm_state_read("w", hostMemory.data(), 100000));
    EXPECT_EQ(hostMemory, deviceMemory);
  }
}

TEST(CudaBackend, DenseAllReduceGossipAndUnsupportedOps) {
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
  std::vector<float> x = gradient(4, 0, 0, 1000);
  float *d = toDevice(x);
  ASSERT_OK(
      gradcomm_dense_all_reduce_f32("d", d, 1000, GRADCOMM_REDUCE_AVERAGE));
  EXPECT_EQ(toHost(d, 1000), x); // one rank: the mean is the value
  ASSERT_OK(gradcomm_gossip_exchange_f32("g", d, 1000, GRADCOMM_SCHEDULE_RING,
                                         0.5f, 0, 1));
  EXPECT_EQ(toHost(d, 1000), x); // one rank: no peer
  double distance = -1;
  ASSERT_OK(gradcomm_consensus_distance_f32(d, 1000, &distance));
  EXPECT_EQ(distance, 0.0); // one rank: no spread
  cudaFree(d);
  ASSERT_OK(gradcomm_finalize());
}

TEST(CudaBackend, ReduceScattersMatchCpu) {
  // One rank: the shard is the whole buffer. The compressed reduce-scatter
  // (selection, gather, update, grouped ncclReduce, scatter into the shard)
  // must give the CPU backend's bits, and its memory too.
  const int64_t n = 50000, k = 500;
  std::vector<std::vector<float>> shards[2], memories[2];
  for (int device = 0; device < 2; ++device) {
    ASSERT_OK(gradcomm_finalize());
    ASSERT_OK(gradcomm_set_backend(device ? GRADCOMM_BACKEND_CUDA
                                          : GRADCOMM_BACKEND_CPU));
    for (uint64_t step = 0; step < 4; ++step) {
      std::vector<float> grad = gradient(9, 0, step, n), shard(n);
      float *g = device ? toDevice(grad) : grad.data();
      float *s = device ? toDevice(shard) : shard.data();
      ASSERT_OK(gradcomm_scalecom_reduce_scatter_f32(
          "rs", g, s, n, k, GRADCOMM_SELECT_EXACT, 0, 0.5f,
          GRADCOMM_REDUCE_AVERAGE));
      shards[device].push_back(device ? toHost(s, n) : shard);
      std::vector<float> memory(n);
      ASSERT_OK(gradcomm_state_read("rs", memory.data(), n));
      memories[device].push_back(memory);
      if (device) {
        cudaFree(g);
        cudaFree(s);
      }
    }
  }
  EXPECT_EQ(shards[1], shards[0]);
  EXPECT_EQ(memories[1], memories[0]);
  std::vector<float> x = gradient(10, 0, 0, n);
  float *d = toDevice(x), *shard = toDevice(std::vector<float>(n, 5.0f));
  ASSERT_OK(
      gradcomm_reduce_scatter_f32("rsd", d, shard, n, GRADCOMM_REDUCE_AVERAGE));
  EXPECT_EQ(toHost(shard, n), x); // one rank: the mean is the value
  cudaFree(d);
  cudaFree(shard);
  ASSERT_OK(gradcomm_finalize());
}

/// A fresh runtime on the CPU (`device` 0) or the CUDA backend, and the
/// recipe's options for k = 300 with a dense warm-up of 2 steps.
gradcomm_scalecom_options restartWithRecipe(int device) {
  EXPECT_OK(gradcomm_finalize());
  EXPECT_OK(gradcomm_set_backend(device ? GRADCOMM_BACKEND_CUDA
                                        : GRADCOMM_BACKEND_CPU));
  gradcomm_scalecom_options options;
  gradcomm_scalecom_options_init(&options, 300);
  options.warmup_steps = 2;
  return options;
}

TEST(CudaBackend, SixteenBitWireMatchesCpu) {
  // One rank: NCCL's 16-bit all-reduce returns its input, so each backend
  // leaves every sent value rounded to the wire's type. The dense
  // all-reduce, the recipe (two dense warm-up steps, then compressed steps
  // whose k values travel narrowed), blocking and started, the local
  // top-k's all-gather and the dense reduce-scatter must give the CPU
  // backend's bits, memory included.
  const int64_t n = 30000;
  for (gradcomm_wire wire : {GRADCOMM_WIRE_BF16, GRADCOMM_WIRE_F16}) {
    std::vector<std::vector<float>> results[2];
    for (int device = 0; device < 2; ++device) {
      gradcomm_scalecom_options options = restartWithRecipe(device);
      options.wire = wire;
      for (uint64_t step = 0; step < 5; ++step) {
        std::vector<float> grad = gradient(13, 0, step, n), dense = grad;
        std::vector<float> out(n), startedOut(n);
        float *g = device ? toDevice(grad) : grad.data();
        float *d = device ? toDevice(dense) : dense.data();
        float *o = device ? toDevice(out) : out.data();
        float *so = device ? toDevice(startedOut) : startedOut.data();
        ASSERT_OK(gradcomm_dense_all_reduce_wire_f32("dw", d, n, wire,
                                                     GRADCOMM_REDUCE_AVERAGE));
        ASSERT_OK(gradcomm_scalecom_recipe_f32("rw", g, o, n, &options,
                                               GRADCOMM_REDUCE_AVERAGE));
        gradcomm_request request = nullptr;
        ASSERT_OK(gradcomm_scalecom_recipe_start_f32(
            "rws", g, so, n, &options, GRADCOMM_REDUCE_AVERAGE, &request));
        ASSERT_OK(gradcomm_wait(&request));
        std::vector<float> topk(n);
        float *t = device ? toDevice(topk) : topk.data();
        int64_t unionSize = -1;
        ASSERT_OK(gradcomm_local_topk_all_gather_wire_f32(
            "tw", g, t, n, 300, wire, GRADCOMM_REDUCE_AVERAGE, &unionSize));
        if (device) {
          topk = toHost(t, n);
          cudaFree(t);
        }
        std::vector<float> shard(n);
        float *sh = device ? toDevice(shard) : shard.data();
        ASSERT_OK(gradcomm_reduce_scatter_wire_f32("rsw", g, sh, n, wire,
                                                   GRADCOMM_REDUCE_AVERAGE));
        if (device) {
          shard = toHost(sh, n);
          cudaFree(sh);
        }
        std::vector<float> memory(n);
        ASSERT_OK(gradcomm_state_read("rw", memory.data(), n));
        results[device].push_back(device ? toHost(d, n) : dense);
        results[device].push_back(device ? toHost(o, n) : out);
        results[device].push_back(device ? toHost(so, n) : startedOut);
        results[device].push_back(memory);
        results[device].push_back(topk);
        results[device].push_back(shard);
        if (device)
          for (float *p : {g, d, o, so})
            cudaFree(p);
      }
    }
    ASSERT_EQ(results[1].size(), results[0].size());
    for (size_t i = 0; i < results[0].size(); ++i)
      EXPECT_EQ(results[1][i], results[0][i])
          << "wire " << wire << ", step " << i / 6 << ", result " << i % 6;
    // The wire rounds: the dense sum is not the float32 gradient.
    EXPECT_NE(results[0][0], gradient(13, 0, 0, n));
    // A started step gives the blocking step's bits.
    for (size_t i = 0; i < results[1].size(); i += 6)
      EXPECT_EQ(results[1][i + 2], results[1][i + 1]) << "step " << i / 6;
  }
  ASSERT_OK(gradcomm_finalize());
}

TEST(CudaBackend, ElasticAverageMatchesCpu) {
  // One rank, blocking: the center starts at x, exchanges every second
  // call with the differences on each wire, local steps in between. x and
  // the center must be the CPU backend's bits.
  const int64_t n = 20000;
  for (gradcomm_wire wire :
       {GRADCOMM_WIRE_F32, GRADCOMM_WIRE_BF16, GRADCOMM_WIRE_F16}) {
    std::vector<std::vector<float>> results[2];
    for (int device = 0; device < 2; ++device) {
      ASSERT_OK(gradcomm_finalize());
      ASSERT_OK(gradcomm_set_backend(device ? GRADCOMM_BACKEND_CUDA
                                            : GRADCOMM_BACKEND_CPU));
      std::vector<float> x = gradient(21, 0, 0, n);
      for (uint64_t step = 0; step < 5; ++step) {
        std::vector<float> g = gradient(22, 0, step, n);
        for (int64_t i = 0; i < n; ++i)
          x[i] -= 0.1f * g[i];
        float *px = device ? toDevice(x) : x.data();
        ASSERT_OK(gradcomm_elastic_average_wire_f32("e", px, n, 0.3f, 2, wire));
        if (device) {
          x = toHost(px, n);
          cudaFree(px);
        }
        std::vector<float> center(n);
        ASSERT_OK(gradcomm_state_read("e", center.data(), n));
        results[device].push_back(x);
        results[device].push_back(center);
      }
    }
    ASSERT_EQ(results[1].size(), results[0].size());
    for (size_t i = 0; i < results[0].size(); ++i)
      EXPECT_EQ(results[1][i], results[0][i])
          << "wire " << wire << ", step " << i / 2
          << (i % 2 ? ", center" : ", x");
  }
  ASSERT_OK(gradcomm_finalize());
}

/// MLIR's rank-1 memref descriptor.
struct Memref1 {
  void *allocated, *aligned;
  int64_t offset, size, stride;
};

TEST(CudaBackend, CompiledSixteenBitTensorsMatchCpu) {
  // Compiled code's bf16 entry points on device memory: widened and
  // narrowed back on the device (Backend::deviceWiden, deviceNarrow) around
  // the float32 steps. A dense all-reduce and a local top-k step must give
  // the CPU backend's bits.
  const int64_t n = 10000, k = 100;
  std::vector<float> values = gradient(31, 0, 0, n);
  std::vector<uint16_t> bits(n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t word;
    std::memcpy(&word, &values[i], 4);
    bits[i] = static_cast<uint16_t>(word >> 16);
  }
  std::vector<std::vector<uint16_t>> results[2];
  for (int device = 0; device < 2; ++device) {
    ASSERT_OK(gradcomm_finalize());
    ASSERT_OK(gradcomm_set_backend(device ? GRADCOMM_BACKEND_CUDA
                                          : GRADCOMM_BACKEND_CPU));
    std::vector<uint16_t> dense = bits, grad = bits, out(n);
    uint16_t *buffers[3] = {dense.data(), grad.data(), out.data()};
    if (device)
      for (uint16_t *&buffer : buffers) {
        uint16_t *host = buffer;
        ASSERT_EQ(cudaMalloc(&buffer, 2 * n), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(buffer, host, 2 * n, cudaMemcpyHostToDevice),
                  cudaSuccess);
      }
    Memref1 descriptors[3];
    gradcomm_unranked_memref memrefs[3];
    for (int i = 0; i < 3; ++i) {
      descriptors[i] = {buffers[i], buffers[i], 0, n, 1};
      memrefs[i] = {1, &descriptors[i]};
    }
    ASSERT_OK(_mlir_ciface_gradcomm_rt_dense_all_reduce_bf16(
        "cd", &memrefs[0], GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(_mlir_ciface_gradcomm_rt_local_topk_all_gather_bf16(
        "ct", &memrefs[1], &memrefs[2], k, GRADCOMM_REDUCE_AVERAGE));
    if (device)
      for (int i = 0; i < 3; i += 2) {
        std::vector<uint16_t> &host = i == 0 ? dense : out;
        ASSERT_EQ(
            cudaMemcpy(host.data(), buffers[i], 2 * n, cudaMemcpyDeviceToHost),
            cudaSuccess);
        cudaFree(buffers[i]);
      }
    if (device)
      cudaFree(buffers[1]);
    results[device] = {dense, out};
  }
  EXPECT_EQ(results[1][0], results[0][0]) << "dense all-reduce";
  EXPECT_EQ(results[1][1], results[0][1]) << "local top-k";
  ASSERT_OK(gradcomm_finalize());
}

TEST(CudaBackend, RecipeOnTheDeviceMatchesCpu) {
  // One rank. Momentum correction (plain and Nesterov, the velocity masked
  // at the sent indices) and the ramp warm-up: the CPU backend's bits,
  // outputs, memory and velocity. Clipping: the device sums the norm's
  // squares in another (fixed) order, so its scale may differ in the last
  // bit: the clipped dense step within 2 ulp of the CPU's.
  const int64_t n = 30000;
  struct Case {
    const char *name;
    float momentum;
    int nesterov;
    gradcomm_warmup warmup;
    float clip;
  };
  for (Case c : {Case{"momentum", 0.9f, 0, GRADCOMM_WARMUP_DENSE, 0.0f},
                 Case{"nesterov", 0.9f, 1, GRADCOMM_WARMUP_DENSE, 0.0f},
                 Case{"ramp", 0.0f, 0, GRADCOMM_WARMUP_RAMP, 0.0f},
                 Case{"clip", 0.0f, 0, GRADCOMM_WARMUP_DENSE, 0.5f}}) {
    std::vector<std::vector<float>> results[2];
    for (int device = 0; device < 2; ++device) {
      gradcomm_scalecom_options options = restartWithRecipe(device);
      options.warmup = c.warmup;
      options.momentum = c.momentum;
      options.nesterov = c.nesterov;
      options.clip = c.clip;
      for (uint64_t step = 0; step < 5; ++step) {
        std::vector<float> grad = gradient(14, 0, step, n), out(n);
        float *g = device ? toDevice(grad) : grad.data();
        float *o = device ? toDevice(out) : out.data();
        ASSERT_OK(gradcomm_scalecom_recipe_f32("rd", g, o, n, &options,
                                               GRADCOMM_REDUCE_AVERAGE));
        results[device].push_back(device ? toHost(o, n) : out);
        std::vector<float> memory(n), velocity(n);
        ASSERT_OK(gradcomm_state_read("rd", memory.data(), n));
        results[device].push_back(memory);
        if (c.momentum > 0.0f) {
          ASSERT_OK(gradcomm_state_read("rd.velocity", velocity.data(), n));
          results[device].push_back(velocity);
        }
        if (device) {
          cudaFree(g);
          cudaFree(o);
        }
      }
    }
    ASSERT_EQ(results[1].size(), results[0].size());
    if (c.clip > 0.0f) {
      const std::vector<float> &cpu = results[0][0], &cuda = results[1][0];
      for (int64_t i = 0; i < n; ++i)
        ASSERT_TRUE(std::fabs(cuda[i] - cpu[i]) <= 2.5e-7f * std::fabs(cpu[i]))
            << c.name << ", element " << i;
      EXPECT_NE(cpu, gradient(14, 0, 0, n)) << "nothing clipped";
      continue;
    }
    for (size_t i = 0; i < results[0].size(); ++i)
      EXPECT_EQ(results[1][i], results[0][i]) << c.name << ", result " << i;
  }
  ASSERT_OK(gradcomm_finalize());
}

TEST(CudaBackend, UnfusedOpsMatchTheFusedStep) {
  const int64_t n = 30000, k = 300;
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<float> grad = gradient(6, 0, step, n);
    float *g = toDevice(grad), *fused = toDevice(std::vector<float>(n));
    float *unfused = toDevice(std::vector<float>(n)), *values;
    int64_t *indices;
    ASSERT_EQ(cudaMalloc(&values, 4 * k), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&indices, 8 * k), cudaSuccess);
    ASSERT_OK(gradcomm_scalecom_f32("fused", g, fused, n, k,
                                    GRADCOMM_SELECT_EXACT, 0, 0.25f,
                                    GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_cltk_compress_f32(
        "unfused", g, n, k, GRADCOMM_SELECT_EXACT, 0, values, indices));
    ASSERT_OK(gradcomm_sparse_all_reduce_f32("sar", values, indices, k, unfused,
                                             n, GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_memory_update_f32("unfused", g, n, indices, k, 0.25f));
    EXPECT_EQ(toHost(unfused, n), toHost(fused, n)) << "step " << step;
    std::vector<float> a(n), b(n);
    ASSERT_OK(gradcomm_state_read("fused", a.data(), n));
    ASSERT_OK(gradcomm_state_read("unfused", b.data(), n));
    EXPECT_EQ(a, b);
    for (void *p : {static_cast<void *>(g), static_cast<void *>(fused),
                    static_cast<void *>(unfused), static_cast<void *>(values),
                    static_cast<void *>(indices)})
      cudaFree(p);
  }
  ASSERT_OK(gradcomm_finalize());
}

/// The started dense all-reduce, ScaleCom step, gossip exchange and sparse
/// all-reduce enqueue the blocking forms' work on the backend's stream: the
/// same bits, several in flight at once, the state held until the wait;
/// the started local top-k, not built for CUDA, is refused before anything
/// is validated.
TEST(CudaBackend, StartedFormsMatchBlocking) {
  const int64_t n = 40000, k = 400;
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<float> grad = gradient(11, 0, step, n);
    float *g = toDevice(grad);
    float *blockingOut = toDevice(std::vector<float>(n));
    float *startedOut = toDevice(std::vector<float>(n));
    float *blockingDense = toDevice(grad), *startedDense = toDevice(grad);
    ASSERT_OK(gradcomm_scalecom_f32("blocking", g, blockingOut, n, k,
                                    GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                    GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_dense_all_reduce_f32("dense", blockingDense, n,
                                            GRADCOMM_REDUCE_AVERAGE));
    gradcomm_request scalecom = nullptr, dense = nullptr, gossip = nullptr;
    ASSERT_OK(gradcomm_scalecom_start_f32("started", g, startedOut, n, k,
                                          GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                          GRADCOMM_REDUCE_AVERAGE, &scalecom));
    ASSERT_OK(gradcomm_dense_all_reduce_start_f32(
        "dense", startedDense, n, GRADCOMM_REDUCE_AVERAGE, &dense));
    // One rank: no peer, a request that completes at once.
    ASSERT_OK(gradcomm_gossip_exchange_start_f32(
        "g", startedDense, n, GRADCOMM_SCHEDULE_RING, 0.5f, 0, 1, &gossip));
    std::vector<float> held(n);
    EXPECT_EQ(gradcomm_state_read("started", held.data(), n), GRADCOMM_OK);
    EXPECT_EQ(gradcomm_scalecom_f32("started", g, startedOut, n, k,
                                    GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                    GRADCOMM_REDUCE_AVERAGE),
              GRADCOMM_ERR_STATE);
    ASSERT_OK(gradcomm_wait(&scalecom));
    ASSERT_OK(gradcomm_wait(&dense));
    ASSERT_OK(gradcomm_wait(&gossip));
    EXPECT_EQ(toHost(startedOut, n), toHost(blockingOut, n)) << "step " << step;
    EXPECT_EQ(toHost(startedDense, n), toHost(blockingDense, n));
    std::vector<float> a(n), b(n);
    ASSERT_OK(gradcomm_state_read("blocking", a.data(), n));
    ASSERT_OK(gradcomm_state_read("started", b.data(), n));
    EXPECT_EQ(a, b);
    for (float *p : {g, blockingOut, startedOut, blockingDense, startedDense})
      cudaFree(p);
  }
  // The started sparse all-reduce: the blocking form's bits.
  std::vector<float> hostValues = {1.5f, -2.0f, 0.25f, 8.0f};
  std::vector<int64_t> hostIndices = {3, 0, 11, 7};
  float *values = toDevice(hostValues);
  int64_t *indices = nullptr;
  ASSERT_EQ(cudaMalloc(&indices, 8 * 4), cudaSuccess);
  ASSERT_EQ(
      cudaMemcpy(indices, hostIndices.data(), 8 * 4, cudaMemcpyHostToDevice),
      cudaSuccess);
  float *blockingOut = toDevice(std::vector<float>(16, 9.0f));
  float *startedOut = toDevice(std::vector<float>(16, 9.0f));
  ASSERT_OK(gradcomm_sparse_all_reduce_f32(
      "sar", values, indices, 4, blockingOut, 16, GRADCOMM_REDUCE_AVERAGE));
  gradcomm_request sparse = nullptr;
  ASSERT_OK(gradcomm_sparse_all_reduce_start_f32(
      "sar", values, indices, 4, startedOut, 16, GRADCOMM_REDUCE_AVERAGE,
      &sparse));
  ASSERT_OK(gradcomm_wait(&sparse));
  EXPECT_EQ(toHost(startedOut, 16), toHost(blockingOut, 16));
  for (void *p :
       {static_cast<void *>(values), static_cast<void *>(indices),
        static_cast<void *>(blockingOut), static_cast<void *>(startedOut)})
    cudaFree(p);
  // The started local top-k: the blocking form's bits and memory; its
  // union size, counted on the device, reaches the counters at the wait.
  for (uint64_t step = 0; step < 2; ++step) {
    float *g = toDevice(gradient(12, 0, step, n));
    float *blockingTopk = toDevice(std::vector<float>(n));
    float *startedTopk = toDevice(std::vector<float>(n));
    int64_t unionSize = -1;
    ASSERT_OK(gradcomm_local_topk_all_gather_f32(
        "topk", g, blockingTopk, n, k, GRADCOMM_REDUCE_AVERAGE, &unionSize));
    gradcomm_request topk = nullptr;
    ASSERT_OK(gradcomm_local_topk_all_gather_start_f32(
        "topk-started", g, startedTopk, n, k, GRADCOMM_REDUCE_AVERAGE, &topk));
    ASSERT_OK(gradcomm_wait(&topk));
    EXPECT_EQ(toHost(startedTopk, n), toHost(blockingTopk, n));
    gradcomm_op_stats stats;
    ASSERT_OK(gradcomm_stats_get("topk-started", &stats));
    EXPECT_EQ(unionSize, k);
    EXPECT_EQ(stats.last_union_size, unionSize);
    std::vector<float> a(n), b(n);
    ASSERT_OK(gradcomm_state_read("topk", a.data(), n));
    ASSERT_OK(gradcomm_state_read("topk-started", b.data(), n));
    EXPECT_EQ(a, b);
    for (float *p : {g, blockingTopk, startedTopk})
      cudaFree(p);
  }
  ASSERT_OK(gradcomm_finalize());
}

TEST(CudaBackend, LocalTopkMatchesCpu) {
  const int64_t n = 20000, k = 200;
  std::vector<std::vector<float>> cpu;
  ASSERT_OK(gradcomm_finalize());
  for (uint64_t step = 0; step < 4; ++step) {
    std::vector<float> grad = gradient(5, 0, step, n), out(n);
    int64_t unionSize = 0;
    ASSERT_OK(gradcomm_local_topk_all_gather_f32("l", grad.data(), out.data(),
                                                 n, k, GRADCOMM_REDUCE_AVERAGE,
                                                 &unionSize));
    EXPECT_EQ(unionSize, k);
    cpu.push_back(out);
  }
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
  for (uint64_t step = 0; step < 4; ++step) {
    std::vector<float> grad = gradient(5, 0, step, n);
    float *g = toDevice(grad), *o = toDevice(std::vector<float>(n, 0.0f));
    int64_t unionSize = 0;
    ASSERT_OK(gradcomm_local_topk_all_gather_f32(
        "l", g, o, n, k, GRADCOMM_REDUCE_AVERAGE, &unionSize));
    EXPECT_EQ(unionSize, k);
    EXPECT_EQ(toHost(o, n), cpu[step]) << "step " << step;
    cudaFree(g);
    cudaFree(o);
  }
  ASSERT_OK(gradcomm_finalize());
}

/// A trainer's non-blocking stream (as PyTorch's pool streams are): the
/// backend's allocation, stamping and copies must be ordered on it, not on
/// the legacy default stream it does not wait for. The gradient is written
/// on that stream without synchronizing, as a trainer's backward pass
/// would; results must still equal the CPU backend's.
/// Puts `values` into `device` on `stream`, but only after a host function
/// on that stream has slept 50 ms: a runtime that is not ordered after the
/// stream reads `device`'s stale contents. `pinned` (page-locked, so the
/// copy is truly asynchronous) must be free: the caller synchronizes.
void enqueueLateCopy(cudaStream_t stream, float *device,
                     const std::vector<float> &values, float *pinned) {
  std::memcpy(pinned, values.data(), sizeof(float) * values.size());
  EXPECT_EQ(cudaLaunchHostFunc(
                stream,
                [](void *) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(50));
                },
                nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(device, pinned, sizeof(float) * values.size(),
                            cudaMemcpyHostToDevice, stream),
            cudaSuccess);
}

TEST(CudaBackend, TrainersStreamOrdersTheStep) {
  // The trainer's stream handed in (gradcomm_cuda_use_handles): its own
  // non-blocking stream, or CUDA's legacy default stream, PyTorch's default,
  // whose handle is NULL and which gradcomm.torch.ddp.use_cuda therefore
  // passes as cudaStreamLegacy. The gradient arrives late on that stream;
  // the step must wait for it and give the CPU backend's bits.
  const int64_t n = 1 << 20, k = 1000;
  std::vector<std::vector<float>> cpu;
  ASSERT_OK(gradcomm_finalize());
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<float> grad = gradient(8, 0, step, n), out(n);
    ASSERT_OK(gradcomm_scalecom_f32("s", grad.data(), out.data(), n, k,
                                    GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                    GRADCOMM_REDUCE_AVERAGE));
    cpu.push_back(out);
  }
  ASSERT_OK(gradcomm_finalize());
  cudaStream_t nonBlocking;
  ASSERT_EQ(cudaStreamCreateWithFlags(&nonBlocking, cudaStreamNonBlocking),
            cudaSuccess);
  float *g = nullptr, *o = nullptr, *pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&g, 4 * n), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&o, 4 * n), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 4 * n), cudaSuccess);
  for (cudaStream_t stream : {nonBlocking, cudaStreamLegacy}) {
    const char *which = stream == nonBlocking ? "non-blocking" : "legacy";
    ASSERT_OK(gradcomm_cuda_use_handles(nullptr, stream));
    ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
    ASSERT_EQ(cudaMemset(g, 0, 4 * n), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (uint64_t step = 0; step < 3; ++step) {
      enqueueLateCopy(stream, g, gradient(8, 0, step, n), pinned);
      EXPECT_OK(gradcomm_scalecom_f32("s", g, o, n, k, GRADCOMM_SELECT_EXACT, 0,
                                      0.5f, GRADCOMM_REDUCE_AVERAGE));
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      EXPECT_EQ(toHost(o, n), cpu[step]) << which << " stream, step " << step;
    }
    ASSERT_OK(gradcomm_finalize());
  }
  cudaFree(g);
  cudaFree(o);
  cudaFreeHost(pinned);
  ASSERT_OK(gradcomm_cuda_use_handles(nullptr, nullptr));
  cudaStreamDestroy(nonBlocking);
}

/// Starting and finalizing the backend again and again frees what it
/// allocated (selection scratch, marks, buffers): device memory in use
/// does not grow from one cycle to the next.
TEST(CudaBackend, FinalizeReleasesDeviceMemory) {
  const int64_t n = 1 << 22;
  std::vector<float> grad = gradient(9, 0, 0, n);
  float *g = toDevice(grad), *o = toDevice(std::vector<float>(n));
  std::vector<size_t> freeAfter;
  for (int cycle = 0; cycle < 3; ++cycle) {
    ASSERT_OK(gradcomm_finalize());
    ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
    ASSERT_OK(gradcomm_scalecom_f32("leak", g, o, n, n / 100,
                                    GRADCOMM_SELECT_EXACT, 0, 0.5f,
                                    GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_finalize());
    size_t freeBytes = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&freeBytes, &total), cudaSuccess);
    freeAfter.push_back(freeBytes);
  }
  // One cycle holds > 64 MiB (memory, keys, marks): a leak of it shows.
  EXPECT_TRUE(freeAfter[2] + (8u << 20) >= freeAfter[0])
      << "free after cycles: " << freeAfter[0] << " " << freeAfter[1] << " "
      << freeAfter[2];
  cudaFree(g);
  cudaFree(o);
}

/// GRADCOMM_CUDA_DEVICE picks the device; a bad value is refused with its
/// name. A call from a thread that never chose a device works (the backend
/// makes its device current on every call).
TEST(CudaBackend, DeviceSelectionAndOtherThreads) {
  ASSERT_OK(gradcomm_finalize());
  setenv("GRADCOMM_CUDA_DEVICE", "99", 1);
  EXPECT_EQ(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA),
            GRADCOMM_ERR_UNSUPPORTED);
  EXPECT_TRUE(std::string(gradcomm_last_error()).find("GRADCOMM_CUDA_DEVICE") !=
              std::string::npos)
      << gradcomm_last_error();
  setenv("GRADCOMM_CUDA_DEVICE", "0", 1);
  ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
  unsetenv("GRADCOMM_CUDA_DEVICE");
  std::vector<float> x = gradient(10, 0, 0, 1000);
  float *d = toDevice(x);
  gradcomm_status status = GRADCOMM_ERR_INTERNAL;
  std::thread other([&] {
    status =
        gradcomm_dense_all_reduce_f32("t", d, 1000, GRADCOMM_REDUCE_AVERAGE);
  });
  other.join();
  EXPECT_EQ(status, GRADCOMM_OK) << gradcomm_last_error();
  EXPECT_EQ(toHost(d, 1000), x);
  cudaFree(d);
  ASSERT_OK(gradcomm_finalize());
}

/// The fused step on a tie-heavy gradient (m starts at 0, g from a few
/// values) against the CPU backend.
TEST(CudaBackend, TieHeavyScaleComMatchesCpu) {
  const int64_t n = 50000, k = 4000;
  auto tieHeavy = [&](uint64_t step) {
    std::vector<float> g = gradient(11, 0, step, n);
    for (float &x : g)
      x = x < -0.5f ? -1.0f : x < 0.0f ? 0.0f : x < 0.5f ? 0.5f : 1.0f;
    return g;
  };
  std::vector<std::vector<float>> cpu;
  ASSERT_OK(gradcomm_finalize());
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<float> grad = tieHeavy(step), out(n);
    ASSERT_OK(gradcomm_scalecom_f32("t", grad.data(), out.data(), n, k,
                                    GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                    GRADCOMM_REDUCE_AVERAGE));
    cpu.push_back(out);
  }
  ASSERT_OK(gradcomm_finalize());
  ASSERT_OK(gradcomm_set_backend(GRADCOMM_BACKEND_CUDA));
  for (uint64_t step = 0; step < 3; ++step) {
    float *g = toDevice(tieHeavy(step)), *o = toDevice(std::vector<float>(n));
    EXPECT_OK(gradcomm_scalecom_f32("t", g, o, n, k, GRADCOMM_SELECT_EXACT, 0,
                                    1.0f, GRADCOMM_REDUCE_AVERAGE));
    EXPECT_EQ(toHost(o, n), cpu[step]) << "step " << step;
    cudaFree(g);
    cudaFree(o);
  }
  ASSERT_OK(gradcomm_finalize());
}

} // namespace

int main(int argc, char **argv) {
  if (int rc = requireCudaDevice("CUDA backend tests"))
    return rc;
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS();
  gradcomm_finalize();
  MPI_Finalize();
  return failed;
}
