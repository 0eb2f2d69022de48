//===- CudaBackend.cpp - The CUDA + NCCL backend of the runtime -----------===//
//
// Part of the GradComm project.
//
// libgradcomm_runtime_cuda.so: the function table of CudaBackendTable.h,
// implemented with the kernels of CudaKernels.h and NCCL. Loaded by
// libgradcomm_runtime only when a trainer selects the CUDA backend.
//
//===----------------------------------------------------------------------===//

#include "CudaBackendTable.h"
#include "CudaKernels.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace gradcomm;

namespace {

/// The backend's process-wide state.
struct Backend {
  ncclComm_t comm = nullptr;
  bool ownsComm = false;
  cudaStream_t stream = nullptr;
  bool ownsStream = false;
  int size = 1;
  cuda::SelectScratch select;
  int64_t *indices = nullptr;
  int64_t indexCapacity = 0;
  float *values = nullptr;
  int64_t valueCapacity = 0;
  uint32_t *marks = nullptr;
  int64_t markCapacity = 0;
  uint32_t stamp = 0;
  float *peer = nullptr;
  int64_t peerCapacity = 0;
  int *nonFiniteFlag = nullptr; // one device int for the NaN/Inf scan
};

Backend backend;

int fail(char *error, const std::string &message) {
  std::snprintf(error, kErrorSize, "%s", message.c_str());
  return 1;
}

#define CUDA_OR_FAIL(expr)                                                     \
  do {                                                                         \
    cudaError_t e = (expr);                                                    \
    if (e != cudaSuccess)                                                      \
      return fail(error, cuda::errorText(e, #expr));                           \
  } while (0)

#define NCCL_OR_FAIL(expr)                                                     \
  do {                                                                         \
    ncclResult_t r = (expr);                                                   \
    if (r != ncclSuccess)                                                      \
      return fail(error, std::string(#expr ": ") + ncclGetErrorString(r));     \
  } while (0)

/// NCCL_OR_FAIL between ncclGroupStart and ncclGroupEnd: a failure closes
/// the group first, so the next call does not land in a half-built group.
#define NCCL_IN_GROUP_OR_FAIL(expr)                                            \
  do {                                                                         \
    ncclResult_t r = (expr);                                                   \
    if (r != ncclSuccess) {                                                    \
      ncclGroupEnd();                                                          \
      return fail(error, std::string(#expr ": ") + ncclGetErrorString(r));     \
    }                                                                          \
  } while (0)

/// Grows a device buffer (contents not kept).
template <typename T>
int reserve(T *&buffer, int64_t &capacity, int64_t count, char *error) {
  if (capacity >= count)
    return 0;
  cudaFree(buffer);
  buffer = nullptr;
  capacity = 0;
  CUDA_OR_FAIL(cudaMalloc(&buffer, sizeof(T) * count));
  capacity = count;
  return 0;
}

int init(MPI_Comm comm, int rank, int size, void *ncclComm, void *stream,
         char *error) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return fail(error, "no CUDA device or driver on this machine");
  backend.size = size;
  if (ncclComm) {
    backend.comm = static_cast<ncclComm_t>(ncclComm);
    backend.ownsComm = false;
  } else {
    CUDA_OR_FAIL(cudaSetDevice(rank % devices));
    ncclUniqueId id;
    if (rank == 0)
      NCCL_OR_FAIL(ncclGetUniqueId(&id));
    if (MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm) != MPI_SUCCESS)
      return fail(error, "MPI_Bcast of the NCCL unique id failed");
    NCCL_OR_FAIL(ncclCommInitRank(&backend.comm, size, id, rank));
    backend.ownsComm = true;
  }
  if (stream) {
    backend.stream = static_cast<cudaStream_t>(stream);
    backend.ownsStream = false;
  } else {
    CUDA_OR_FAIL(cudaStreamCreate(&backend.stream));
    backend.ownsStream = true;
  }
  return 0;
}

void shutdown() {
  cudaFree(backend.indices);
  cudaFree(backend.values);
  cudaFree(backend.marks);
  cudaFree(backend.peer);
  cudaFree(backend.nonFiniteFlag);
  if (backend.ownsComm && backend.comm)
    ncclCommDestroy(backend.comm);
  if (backend.ownsStream && backend.stream)
    cudaStreamDestroy(backend.stream);
  backend = Backend();
}

int allocate(float **memory, int64_t count, char *error) {
  *memory = nullptr;
  if (count == 0)
    return 0;
  CUDA_OR_FAIL(cudaMalloc(memory, sizeof(float) * count));
  CUDA_OR_FAIL(cudaMemset(*memory, 0, sizeof(float) * count));
  return 0;
}

void release(float *memory) { cudaFree(memory); }

int toHost(float *host, const float *device, int64_t count, char *error) {
  CUDA_OR_FAIL(
      cudaMemcpy(host, device, sizeof(float) * count, cudaMemcpyDeviceToHost));
  return 0;
}

int fromHost(float *device, const float *host, int64_t count, char *error) {
  CUDA_OR_FAIL(
      cudaMemcpy(device, host, sizeof(float) * count, cudaMemcpyHostToDevice));
  return 0;
}

int bytesToHost(void *host, const void *device, size_t bytes, char *error) {
  CUDA_OR_FAIL(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  return 0;
}

/// A fresh stamp for the marks of `count` elements (grown and cleared as
/// needed), so each update sees only its own indices.
int nextStamp(int64_t count, char *error) {
  const int64_t oldMarks = backend.markCapacity;
  if (reserve(backend.marks, backend.markCapacity, count, error))
    return 1;
  if (backend.markCapacity != oldMarks || backend.stamp == UINT32_MAX) {
    CUDA_OR_FAIL(
        cudaMemset(backend.marks, 0, sizeof(uint32_t) * backend.markCapacity));
    backend.stamp = 0;
  }
  ++backend.stamp;
  return 0;
}

int compress(const float *memory, const float *grad, int64_t count, int64_t k,
             int selection, int64_t chunkSize, int leader, float *values,
             int64_t *indices, char *error) {
  int rank = 0;
  NCCL_OR_FAIL(ncclCommUserRank(backend.comm, &rank));
  if (rank == leader) {
    if (selection == 1)
      CUDA_OR_FAIL(cuda::selectChunk(const_cast<float *>(memory), grad, count,
                                     chunkSize, indices, 1.0f, nullptr, nullptr,
                                     /*update=*/false, backend.stream));
    else
      CUDA_OR_FAIL(cuda::selectExact(memory, grad, count, k, indices,
                                     backend.select, backend.stream));
  }
  NCCL_OR_FAIL(ncclBroadcast(indices, indices, k, ncclInt64, leader,
                             backend.comm, backend.stream));
  CUDA_OR_FAIL(cuda::gather(memory, grad, indices, k, values, backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

int sparseAllReduce(const float *values, const int64_t *indices, int64_t k,
                    float *out, int64_t count, int average, char *error) {
  if (reserve(backend.values, backend.valueCapacity, k, error))
    return 1;
  NCCL_OR_FAIL(ncclAllReduce(values, backend.values, k, ncclFloat, ncclSum,
                             backend.comm, backend.stream));
  CUDA_OR_FAIL(cudaMemsetAsync(out, 0, sizeof(float) * count, backend.stream));
  CUDA_OR_FAIL(cuda::scatter(out, indices, backend.values, k,
                             average ? float(backend.size) : 1.0f,
                             backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

int memoryUpdate(float *memory, const float *grad, int64_t count,
                 const int64_t *indices, int64_t k, float beta, char *error) {
  if (nextStamp(count, error))
    return 1;
  CUDA_OR_FAIL(cuda::gatherAndUpdate(memory, grad, count, indices, k, beta,
                                     nullptr, nullptr, backend.marks,
                                     backend.stamp, backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

int bytesFromHost(void *device, const void *host, size_t bytes, char *error) {
  CUDA_OR_FAIL(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice,
                               backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

int zero(float *data, int64_t count, char *error) {
  CUDA_OR_FAIL(cudaMemsetAsync(data, 0, sizeof(float) * count, backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

int anyNonFinite(const float *input, int64_t count, float limit, int *result,
                 char *error) {
  if (!backend.nonFiniteFlag)
    CUDA_OR_FAIL(cudaMalloc(&backend.nonFiniteFlag, sizeof(int)));
  bool bad = false;
  CUDA_OR_FAIL(cuda::anyNonFinite(input, count, limit, backend.nonFiniteFlag,
                                  &bad, backend.stream));
  *result = bad;
  return 0;
}

int denseAllReduce(float *data, int64_t count, int average, char *error) {
  NCCL_OR_FAIL(ncclAllReduce(data, data, count, ncclFloat, ncclSum,
                             backend.comm, backend.stream));
  // Sum, then divide (not ncclAvg), as the CPU backend does.
  if (average)
    CUDA_OR_FAIL(
        cuda::divide(data, count, float(backend.size), backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

int scalecom(float *memory, const float *grad, float *out, int64_t count,
             int64_t k, int selection, int64_t chunkSize, float beta,
             int average, int leader, char *error) {
  int rank = 0;
  NCCL_OR_FAIL(ncclCommUserRank(backend.comm, &rank));
  if (reserve(backend.indices, backend.indexCapacity, k, error) ||
      reserve(backend.values, backend.valueCapacity, k, error) ||
      nextStamp(count, error))
    return 1;
  const bool chunk = selection == 1;
  bool updated = false;
  if (rank == leader) {
    if (chunk) {
      CUDA_OR_FAIL(cuda::selectChunk(memory, grad, count, chunkSize,
                                     backend.indices, beta, backend.values, out,
                                     /*update=*/true, backend.stream));
      updated = true;
    } else {
      CUDA_OR_FAIL(cuda::selectExact(memory, grad, count, k, backend.indices,
                                     backend.select, backend.stream));
    }
  }
  NCCL_OR_FAIL(ncclBroadcast(backend.indices, backend.indices, k, ncclInt64,
                             leader, backend.comm, backend.stream));
  if (!updated)
    CUDA_OR_FAIL(cuda::gatherAndUpdate(memory, grad, count, backend.indices, k,
                                       beta, backend.values, out, backend.marks,
                                       backend.stamp, backend.stream));
  NCCL_OR_FAIL(ncclAllReduce(backend.values, backend.values, k, ncclFloat,
                             ncclSum, backend.comm, backend.stream));
  CUDA_OR_FAIL(cuda::scatter(out, backend.indices, backend.values, k,
                             average ? float(backend.size) : 1.0f,
                             backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

int localTopk(float *memory, const float *grad, float *out, int64_t count,
              int64_t k, int average, int64_t *unionSize, char *error) {
  const int64_t all = k * backend.size;
  if (reserve(backend.indices, backend.indexCapacity, all, error) ||
      reserve(backend.values, backend.valueCapacity, all, error) ||
      nextStamp(count, error))
    return 1;
  int rank = 0;
  NCCL_OR_FAIL(ncclCommUserRank(backend.comm, &rank));
  // This rank's block of the gathered buffers holds its own k entries.
  int64_t *mine = backend.indices + rank * k;
  float *myValues = backend.values + rank * k;
  CUDA_OR_FAIL(cuda::selectExact(memory, grad, count, k, mine, backend.select,
                                 backend.stream));
  // The memory pass also zeroes the output the blocks are added into.
  CUDA_OR_FAIL(cuda::gatherAndUpdate(memory, grad, count, mine, k, 1.0f,
                                     myValues, out, backend.marks,
                                     backend.stamp, backend.stream));
  NCCL_OR_FAIL(ncclGroupStart());
  NCCL_IN_GROUP_OR_FAIL(ncclAllGather(myValues, backend.values, k, ncclFloat,
                                      backend.comm, backend.stream));
  NCCL_IN_GROUP_OR_FAIL(ncclAllGather(mine, backend.indices, k, ncclInt64,
                                      backend.comm, backend.stream));
  NCCL_OR_FAIL(ncclGroupEnd());
  for (int r = 0; r < backend.size; ++r)
    CUDA_OR_FAIL(cuda::scatterAdd(out, backend.indices + r * k,
                                  backend.values + r * k, k, backend.stream));
  // The union of the index sets (build-up), on the host: n k entries.
  std::vector<int64_t> host(all);
  CUDA_OR_FAIL(cudaMemcpyAsync(host.data(), backend.indices,
                               sizeof(int64_t) * all, cudaMemcpyDeviceToHost,
                               backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  std::sort(host.begin(), host.end());
  host.erase(std::unique(host.begin(), host.end()), host.end());
  *unionSize = static_cast<int64_t>(host.size());
  if (average) {
    // Reuse the index buffer for the union (the gathered copy is done).
    CUDA_OR_FAIL(cudaMemcpyAsync(backend.indices, host.data(),
                                 sizeof(int64_t) * host.size(),
                                 cudaMemcpyHostToDevice, backend.stream));
    CUDA_OR_FAIL(cuda::divideAt(out, backend.indices,
                                static_cast<int64_t>(host.size()),
                                float(backend.size), backend.stream));
  }
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

int gossip(float *x, int64_t count, int peer, float mixing, char *error) {
  if (reserve(backend.peer, backend.peerCapacity, count, error))
    return 1;
  NCCL_OR_FAIL(ncclGroupStart());
  NCCL_IN_GROUP_OR_FAIL(
      ncclSend(x, count, ncclFloat, peer, backend.comm, backend.stream));
  NCCL_IN_GROUP_OR_FAIL(ncclRecv(backend.peer, count, ncclFloat, peer,
                                 backend.comm, backend.stream));
  NCCL_OR_FAIL(ncclGroupEnd());
  CUDA_OR_FAIL(cuda::mix(x, backend.peer, count, mixing, backend.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(backend.stream));
  return 0;
}

} // namespace

extern "C" __attribute__((visibility("default")))
// In the order of CudaBackendTable.h.
const CudaBackendTable gradcomm_cuda_backend_v4 = {kCudaBackendVersion,
                                                   init,
                                                   shutdown,
                                                   allocate,
                                                   release,
                                                   toHost,
                                                   bytesToHost,
                                                   fromHost,
                                                   bytesFromHost,
                                                   zero,
                                                   anyNonFinite,
                                                   denseAllReduce,
                                                   scalecom,
                                                   compress,
                                                   sparseAllReduce,
                                                   memoryUpdate,
                                                   localTopk,
                                                   gossip};
