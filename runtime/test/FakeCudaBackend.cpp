//===- FakeCudaBackend.cpp - CudaBackendTable on host memory, one rank ----===//
//
// Part of the GradComm project.
//
// A stand-in for libgradcomm_runtime_cuda.so that machines without a GPU
// can load: every entry of CudaBackendTable.h on host memory with the CPU
// kernels, for one rank (NCCL's collectives are then the identity). It
// exercises everything the runtime does around the CUDA backend (loading,
// the adapter behind Backend.h, state memory owned through the backend,
// staging for checkpoints and logs, compiled code's buffers, the started
// forms' completions and their polling) on every CI run; the real device
// code is tested by the GPU-gated tests.
//
// It also keeps books: shutdown aborts the process, naming what leaked, if
// a buffer was not released or a completion not forgotten.
//
//===----------------------------------------------------------------------===//

#include "CudaBackendTable.h"
#include "HalfFloat.h"
#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

using namespace gradcomm;

namespace {

bool started = false;
std::set<void *> buffers;
// cudaMalloc and cudaFree are thread-safe, so the stand-in's record is too.
std::mutex buffersMutex;
std::set<void *> completions;
std::set<void *> groups;
cpu::SelectScratch scratch;
/// The indices of the last fused ScaleCom step (commitVelocity's mask).
std::vector<int64_t> lastIndices;

int fail(char *error, const char *message) {
  std::snprintf(error, kErrorSize, "%s", message);
  return 1;
}

#define ENTER()                                                                \
  do {                                                                         \
    if (!started)                                                              \
      return fail(error, "the fake cuda backend is not started");              \
  } while (0)

int prepare(int rank, int, void *, void *, void *uniqueId, char *error) {
  if (rank != 0)
    return fail(error, "the fake cuda backend runs one rank only");
  std::memset(uniqueId, 7, kNcclUniqueIdBytes);
  started = true;
  return 0;
}

int connect(int, int size, const void *, double, char *error) {
  if (size != 1) {
    started = false;
    return fail(error, "the fake cuda backend runs one rank only");
  }
  return 0;
}

void shutdown() {
  if (!buffers.empty() || !completions.empty() || !groups.empty()) {
    std::fprintf(stderr,
                 "fake cuda backend: shut down holding %zu buffers, %zu "
                 "completions, %zu groups\n",
                 buffers.size(), completions.size(), groups.size());
    std::abort();
  }
  started = false;
}

int allocate(float **memory, int64_t count, char *error) {
  ENTER();
  *memory = nullptr;
  if (count == 0)
    return 0;
  *memory = static_cast<float *>(std::calloc(count, sizeof(float)));
  if (!*memory)
    return fail(error, "fake cuda backend: out of memory");
  std::lock_guard<std::mutex> lock(buffersMutex);
  buffers.insert(*memory);
  return 0;
}

void release(float *memory) {
  if (!memory)
    return;
  std::lock_guard<std::mutex> lock(buffersMutex);
  if (buffers.erase(memory) == 0) {
    std::fprintf(stderr, "fake cuda backend: release of %p, not allocated\n",
                 static_cast<void *>(memory));
    std::abort();
  }
  std::free(memory);
}

int bytesToHost(void *host, const void *device, size_t bytes, char *error) {
  ENTER();
  if (bytes > 0)
    std::memcpy(host, device, bytes);
  return 0;
}

int bytesFromHost(void *device, const void *host, size_t bytes, char *error) {
  ENTER();
  if (bytes > 0)
    std::memcpy(device, host, bytes);
  return 0;
}

int zero(float *data, int64_t count, char *error) {
  ENTER();
  std::memset(data, 0, sizeof(float) * count);
  return 0;
}

int anyNonFinite(const float *memory, const float *input, int64_t count,
                 float limit, int *result, char *error) {
  ENTER();
  uint32_t largest = memory ? cpu::maxMagnitudeKeySum(memory, input, count)
                            : cpu::maxMagnitudeKey(input, count);
  *result = cpu::exceedsLimit(largest, limit) ? 1 : 0;
  return 0;
}

// One rank: a sum over the group is the value, a mean divides by one.

/// float32 -> the 16-bit `wire` (HalfFloat.h's rounding), and back.
int narrowToWire(const float *in, uint16_t *out, int64_t count, int wire,
                 char *error) {
  if (wire == kWireBfloat16)
    half::narrowBfloat16(in, out, count);
  else if (wire == kWireFloat16)
    half::narrowHalf(in, out, count);
  else
    return fail(error, "fake cuda backend: unknown wire type");
  return 0;
}

int widenFromWire(const uint16_t *in, float *out, int64_t count, int wire,
                  char *error) {
  if (wire == kWireBfloat16)
    half::widenBfloat16(in, out, count);
  else if (wire == kWireFloat16)
    half::widenHalf(in, out, count);
  else
    return fail(error, "fake cuda backend: unknown wire type");
  return 0;
}

/// One rank's sum on `wire`: each value rounded to the 16-bit type and
/// widened back, as the real library's narrow, NCCL sum and widen leave it.
int sumOnWire(float *data, int64_t count, int wire, char *error) {
  if (wire == kWireFloat32)
    return 0;
  std::vector<uint16_t> packed(count);
  return narrowToWire(data, packed.data(), count, wire, error) ||
         widenFromWire(packed.data(), data, count, wire, error);
}

int denseAllReduce(float *data, int64_t count, int, int wire, char *error) {
  ENTER();
  return sumOnWire(data, count, wire, error);
}

void select(const float *memory, const float *grad, int64_t count, int64_t k,
            int selection, int64_t chunkSize, int64_t *indices) {
  if (selection == 1)
    cpu::selectChunk(memory, grad, count, chunkSize, indices);
  else
    cpu::selectExact(memory, grad, count, k, indices, scratch);
}

/// The real library narrows the indices to `indexBytes` each for the
/// broadcast (index j less j * chunkSize): every one must fit.
int checkWire(const int64_t *indices, int64_t k, int64_t chunkSize,
              int indexBytes, char *error) {
  if (indexBytes != 1 && indexBytes != 2 && indexBytes != 4 && indexBytes != 8)
    return fail(error, "fake cuda backend: index width not 1, 2, 4 or 8");
  for (int64_t j = 0; j < k && indexBytes < 8; ++j) {
    const uint64_t offset = static_cast<uint64_t>(indices[j] - j * chunkSize);
    if (offset >> (8 * indexBytes) != 0)
      return fail(error, "fake cuda backend: an index does not fit the "
                         "broadcast's width");
  }
  return 0;
}

int scalecom(float *memory, const float *grad, float *out, int64_t count,
             int64_t k, int selection, int64_t chunkSize, float beta, int,
             int leader, int indexBytes, int wire, char *error) {
  ENTER();
  if (leader != 0)
    return fail(error, "fake cuda backend: the leader of one rank is 0");
  std::vector<int64_t> indices(k);
  std::vector<float> values(k);
  select(memory, grad, count, k, selection, chunkSize, indices.data());
  if (checkWire(indices.data(), k, chunkSize, indexBytes, error))
    return 1;
  cpu::gatherAndUpdate(memory, grad, count, indices.data(), k, beta,
                       values.data(), out);
  if (sumOnWire(values.data(), k, wire, error))
    return 1;
  cpu::scatter(out, indices.data(), values.data(), k);
  lastIndices = indices;
  return 0;
}

int compress(const float *memory, const float *grad, int64_t count, int64_t k,
             int selection, int64_t chunkSize, int, int indexBytes,
             float *values, int64_t *indices, char *error) {
  ENTER();
  select(memory, grad, count, k, selection, chunkSize, indices);
  if (checkWire(indices, k, chunkSize, indexBytes, error))
    return 1;
  cpu::gather(memory, grad, indices, k, values);
  return 0;
}

int sparseAllReduce(const float *values, const int64_t *indices, int64_t k,
                    float *out, int64_t count, int, char *error) {
  ENTER();
  std::memset(out, 0, sizeof(float) * count);
  cpu::scatter(out, indices, values, k);
  return 0;
}

int memoryUpdate(float *memory, const float *grad, int64_t count,
                 const int64_t *indices, int64_t k, float beta, char *error) {
  ENTER();
  cpu::gatherAndUpdate(memory, grad, count, indices, k, beta, nullptr, nullptr);
  return 0;
}

int localTopk(float *memory, const float *grad, float *out, int64_t count,
              int64_t k, int, int wire, int64_t *unionSize, char *error) {
  ENTER();
  std::vector<int64_t> indices(k);
  std::vector<float> values(k);
  cpu::selectExact(memory, grad, count, k, indices.data(), scratch);
  cpu::gatherAndUpdate(memory, grad, count, indices.data(), k, 1.0f,
                       values.data(), out);
  // One rank's all-gather on the wire: its own block, rounded.
  if (sumOnWire(values.data(), k, wire, error))
    return 1;
  for (int64_t j = 0; j < k; ++j)
    out[indices[j]] += values[j];
  *unionSize = k;
  return 0;
}

int gossip(float *, int64_t, int, float, int, char *error) {
  return fail(error, "fake cuda backend: one rank has no peer");
}

/// A completion that finishes on its second poll, so the wait's polling
/// loop runs; `value` is what completionValue reports.
struct Completion {
  int polls = 2;
  int64_t value = 0;
};

int complete(void **completion, int64_t value = 0) {
  auto *done = new Completion{2, value};
  completions.insert(done);
  *completion = done;
  return 0;
}

int startDenseAllReduce(float *data, int64_t count, int average, int wire,
                        void **completion, char *error) {
  return denseAllReduce(data, count, average, wire, error)
             ? 1
             : complete(completion);
}

int startScalecom(float *memory, const float *grad, float *out, int64_t count,
                  int64_t k, int selection, int64_t chunkSize, float beta,
                  int average, int leader, int indexBytes, int wire,
                  void **completion, char *error) {
  return scalecom(memory, grad, out, count, k, selection, chunkSize, beta,
                  average, leader, indexBytes, wire, error)
             ? 1
             : complete(completion);
}

int startGossip(float *x, int64_t count, int peer, float mixing, int wire,
                void **completion, char *error) {
  return gossip(x, count, peer, mixing, wire, error) ? 1 : complete(completion);
}

int startSparseAllReduce(const float *values, const int64_t *indices, int64_t k,
                         float *out, int64_t count, int average,
                         void **completion, char *error) {
  return sparseAllReduce(values, indices, k, out, count, average, error)
             ? 1
             : complete(completion);
}

int startLocalTopk(float *memory, const float *grad, float *out, int64_t count,
                   int64_t k, int average, int wire, void **completion,
                   char *error) {
  int64_t unionSize = 0;
  return localTopk(memory, grad, out, count, k, average, wire, &unionSize,
                   error)
             ? 1
             : complete(completion, unionSize);
}

int poll(void *completion, int *finished, char *error) {
  ENTER();
  if (completions.count(completion) == 0)
    return fail(error, "fake cuda backend: poll of an unknown completion");
  int &polls = static_cast<Completion *>(completion)->polls;
  polls -= polls > 0 ? 1 : 0;
  *finished = polls == 0;
  return 0;
}

/// Read before the polls finished, the value would not be there yet on a
/// device: the stand-in refuses it the same way, loudly.
int64_t completionValue(void *completion) {
  const auto *done = static_cast<const Completion *>(completion);
  if (completions.count(completion) == 0 || done->polls != 0) {
    std::fprintf(stderr,
                 "fake cuda backend: value of %p read before it finished\n",
                 completion);
    std::abort();
  }
  return done->value;
}

void forget(void *completion) {
  if (completions.erase(completion) == 0) {
    std::fprintf(stderr, "fake cuda backend: forget of %p, not started\n",
                 completion);
    std::abort();
  }
  delete static_cast<Completion *>(completion);
}

int splitGroup(int, int, void **group, char *error) {
  ENTER();
  *group = new int(0);
  groups.insert(*group);
  return 0;
}

void useGroup(void *) {}

void freeGroup(void *group) {
  if (groups.erase(group) != 0)
    delete static_cast<int *>(group);
}

/// One rank: its shard is the whole buffer.
int reduceScatter(const float *data, float *shard, int64_t count, int, int wire,
                  char *error) {
  ENTER();
  std::memcpy(shard, data, sizeof(float) * count);
  return sumOnWire(shard, count, wire, error);
}

int scalecomReduceScatter(float *memory, const float *grad, float *shard,
                          int64_t count, int64_t k, int selection,
                          int64_t chunkSize, float beta, int average,
                          int leader, int indexBytes, int wire, char *error) {
  return scalecom(memory, grad, shard, count, k, selection, chunkSize, beta,
                  average, leader, indexBytes, wire, error);
}

// The recipe's parts, with ops/ScaleCom.cpp's host arithmetic: the norm
// summed in index order, so the stand-in gives the CPU backend's bits.

int clipInput(const float *grad, float *out, int64_t count, float clip,
              char *error) {
  ENTER();
  double squares = 0.0;
  for (int64_t i = 0; i < count; ++i)
    squares += static_cast<double>(grad[i]) * grad[i];
  const double norm = std::sqrt(squares);
  if (!(norm > clip)) {
    std::memcpy(out, grad, sizeof(float) * count);
    return 0;
  }
  const auto scale = static_cast<float>(clip / norm);
  for (int64_t i = 0; i < count; ++i)
    out[i] = grad[i] * scale;
  return 0;
}

int velocityInput(const float *velocity, const float *input, float *next,
                  float *sent, int64_t count, float momentum, char *error) {
  ENTER();
  for (int64_t i = 0; i < count; ++i) {
    next[i] = momentum * velocity[i] + input[i];
    if (sent)
      sent[i] = input[i] + momentum * next[i];
  }
  return 0;
}

int commitVelocity(float *velocity, const float *next, int64_t count,
                   int masked, char *error) {
  ENTER();
  std::memcpy(velocity, next, sizeof(float) * count);
  if (masked)
    for (int64_t index : lastIndices)
      velocity[index] = 0.0f;
  return 0;
}

int widenValues(const uint16_t *in, float *out, int64_t count, int wire,
                char *error) {
  ENTER();
  return widenFromWire(in, out, count, wire, error);
}

int narrowValues(const float *in, uint16_t *out, int64_t count, int wire,
                 char *error) {
  ENTER();
  return narrowToWire(in, out, count, wire, error);
}

/// One rank: the center starts at x (its own mean), the differences are
/// summed over one rank on the wire (rounded), then the host's update.
int elasticAverage(float *x, float *center, int64_t count, float alpha,
                   int first, int wire, char *error) {
  ENTER();
  if (first)
    std::copy(x, x + count, center);
  std::vector<float> sum(count);
  for (int64_t i = 0; i < count; ++i)
    sum[i] = x[i] - center[i];
  if (sumOnWire(sum.data(), count, wire, error))
    return 1;
  for (int64_t i = 0; i < count; ++i) {
    const float difference = x[i] - center[i];
    x[i] = x[i] - alpha * difference;
    center[i] = center[i] + alpha * sum[i];
  }
  return 0;
}

/// Every entry by name (CudaBackendTable.h).
CudaBackendTable filledTable() {
  CudaBackendTable table{};
  GRADCOMM_CUDA_BACKEND_FILL_TABLE()
#ifdef GRADCOMM_FAKE_CUDA_LEAVE_OUT
  // For the loader's check (runtime.backend-loader): one entry left null.
  table.GRADCOMM_FAKE_CUDA_LEAVE_OUT = nullptr;
#endif
  return table;
}

} // namespace

extern "C" __attribute__((visibility("default")))
// Filled by name (CudaBackendTable.h); the real library's symbol.
const CudaBackendTable gradcomm_cuda_backend_v11 = filledTable();
