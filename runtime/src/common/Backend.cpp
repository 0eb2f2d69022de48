//===- Backend.cpp - Backend selection and the CUDA backend's loading -----===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "gradcomm/runtime_cuda.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

using namespace gradcomm;

namespace {

/// dlopen's handle of libgradcomm_runtime_cuda.so (kept loaded once
/// loaded: its table may be reused after a finalize).
void *cudaLibrary = nullptr;

/// Loads the CUDA backend library from next to this library (or the
/// loader's search path) and returns its table.
const CudaBackendTable *loadCudaBackend(std::string &why) {
  if (!cudaLibrary) {
    Dl_info info;
    std::string path = kCudaBackendLibrary;
    if (dladdr(reinterpret_cast<void *>(&gradcomm_set_backend), &info) &&
        info.dli_fname) {
      std::string self = info.dli_fname;
      size_t slash = self.rfind('/');
      if (slash != std::string::npos)
        path = self.substr(0, slash + 1) + kCudaBackendLibrary;
    }
    cudaLibrary = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!cudaLibrary) {
      // The first error is usually the real cause (the library is there
      // but needs a libnccl.so.2 the loader cannot find): keep it before
      // the second attempt overwrites it.
      const char *besideError = dlerror();
      std::string first = besideError ? besideError : path;
      cudaLibrary = dlopen(kCudaBackendLibrary, RTLD_NOW | RTLD_LOCAL);
      if (!cudaLibrary) {
        const char *searchError = dlerror();
        why = "the CUDA backend is not available (" + first +
              "; on the loader's path: " +
              (searchError ? searchError : kCudaBackendLibrary) +
              "); GradComm builds it when nvcc and NCCL are found";
        return nullptr;
      }
    }
  }
  auto *table = static_cast<const CudaBackendTable *>(
      dlsym(cudaLibrary, kCudaBackendSymbol));
  if (!table || table->version != kCudaBackendVersion) {
    why = "libgradcomm_runtime_cuda.so does not match this runtime";
    return nullptr;
  }
  if (const char *missing = missingCudaBackendEntry(*table)) {
    why = std::string("libgradcomm_runtime_cuda.so's table has no '") +
          missing + "' entry";
    return nullptr;
  }
  return table;
}

/// This rank's index among the ranks of its node (the transport's node
/// map): each rank of a node takes its own GPU by default. Collective.
gradcomm_status nodeLocalRank(const Call &call, int *localRank) {
  GRADCOMM_RETURN_IF_ERROR(mapNodes(call));
  const Context &ctx = context();
  *localRank = 0;
  for (int r = 0; r < ctx.rank; ++r)
    *localRank += sharesNode(r) ? 1 : 0;
  return GRADCOMM_OK;
}

} // namespace

int gradcomm::wireIndexBytes(const CompressStep &step) {
  return step.selection == GRADCOMM_SELECT_CHUNK
             ? chunkIndexBytes(step.count, step.chunkSize)
             : indexBytes(step.count);
}

IndexCoding Backend::indexCoding(const CompressStep &step) const {
  return fixedIndexCoding(step.k, wireIndexBytes(step), step.chunkSize);
}

gradcomm_status Backend::compressAndUpdate(const Call &call,
                                           const CompressStep &step,
                                           const Prepared &prepared, float beta,
                                           float *values,
                                           int64_t *indices) const {
  GRADCOMM_RETURN_IF_ERROR(compress(call, step, prepared, values, indices));
  return memoryUpdate(call, step.state, step.grad, step.count, indices, step.k,
                      beta);
}

namespace {

/// GRADCOMM_ERR_UNSUPPORTED: "the <backend> backend <what>" (the defaults
/// of what only a device backend runs).
gradcomm_status refuse(const Call &call, const Backend &backend,
                       const char *what) {
  return call.fail(GRADCOMM_ERR_UNSUPPORTED,
                   std::string("the ") + backend.name() + " backend " + what);
}

} // namespace

gradcomm_status Backend::deviceDenseAllReduceWire(const Call &call, float *,
                                                  int64_t, bool,
                                                  gradcomm_wire) const {
  return refuse(call, *this, "does not narrow a 16-bit wire itself");
}

gradcomm_status
Backend::startDeviceDenseAllReduceWire(const Call &call, float *, int64_t, bool,
                                       gradcomm_wire,
                                       gradcomm_request_s &) const {
  return refuse(call, *this, "does not narrow a 16-bit wire itself");
}

gradcomm_status Backend::deviceGossipWire(const Call &call, float *, int64_t,
                                          int, float, gradcomm_wire) const {
  return refuse(call, *this, "does not narrow a 16-bit wire itself");
}

gradcomm_status Backend::startDeviceGossipWire(const Call &call, float *,
                                               int64_t, int, float,
                                               gradcomm_wire,
                                               gradcomm_request_s &) const {
  return refuse(call, *this, "does not narrow a 16-bit wire itself");
}

gradcomm_status Backend::deviceElasticAverage(const Call &call, float *,
                                              float *, int64_t, float, bool,
                                              gradcomm_wire) const {
  return refuse(call, *this, "does not average elastically on its own memory");
}

gradcomm_status Backend::deviceWiden(const Call &call, const uint16_t *,
                                     float *, int64_t, gradcomm_wire) const {
  return refuse(call, *this, "does not narrow a 16-bit wire itself");
}

gradcomm_status Backend::deviceNarrow(const Call &call, const float *,
                                      uint16_t *, int64_t,
                                      gradcomm_wire) const {
  return refuse(call, *this, "does not narrow a 16-bit wire itself");
}

gradcomm_status Backend::deviceClip(const Call &call, const float *, float *,
                                    int64_t, float) const {
  return refuse(call, *this, "does not clip on its own memory");
}

gradcomm_status Backend::deviceVelocity(const Call &call, const float *,
                                        const float *, float *, float *,
                                        int64_t, float) const {
  return refuse(call, *this, "does not keep a velocity on its own memory");
}

gradcomm_status Backend::deviceCommitVelocity(const Call &call, float *,
                                              const float *, int64_t,
                                              bool) const {
  return refuse(call, *this, "does not keep a velocity on its own memory");
}

gradcomm_status Backend::deviceReduceScatter(const Call &call, const float *,
                                             float *, int64_t, bool,
                                             gradcomm_wire) const {
  return refuse(call, *this, "has no reduce-scatter of its own");
}

gradcomm_status Backend::deviceScalecomReduceScatter(const Call &call,
                                                     const CompressStep &,
                                                     const Prepared &, float,
                                                     bool, float *) const {
  return refuse(call, *this, "has no compressed reduce-scatter of its own");
}

const Backend &gradcomm::backend() {
  const Backend *selected = context().selected;
  return selected ? *selected : *extensions().hostBackend;
}

void BackendMemory::reset() {
  if (pointer && owner)
    owner->release(pointer);
  pointer = nullptr;
}

gradcomm_status gradcomm::hostView(const Call &call, const void *data,
                                   size_t bytes, std::vector<uint8_t> &staging,
                                   const void **host) {
  const Backend &selected = backend();
  if (selected.tensorsOnHost()) {
    *host = data;
    return GRADCOMM_OK;
  }
  staging.resize(bytes);
  GRADCOMM_RETURN_IF_ERROR(
      selected.copyToHost(call, staging.data(), data, bytes));
  *host = staging.data();
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::requireHostTensors(const Call &call,
                                             const std::string &what) {
  if (backend().tensorsOnHost())
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_UNSUPPORTED,
                   what + " runs on the CPU backend only (the " +
                       backend().name() + " backend is selected)");
}

void gradcomm::releaseCudaBackend() {
  Context &ctx = context();
  // States and groups' communicators first: they go back while the
  // backend runs.
  ctx.states.clear();
  for (auto &entry : ctx.groups) {
    backend().freeGroup(entry.second->backendGroup);
    entry.second->backendGroup = nullptr;
  }
  if (!ctx.cuda)
    return;
  ctx.cuda->shutdown();
  ctx.cuda = nullptr;
  ctx.selected = cudaBackendOver(nullptr);
}

gradcomm_status gradcomm_set_backend(gradcomm_backend backend) {
  return guarded("set_backend", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    // Job-wide, whichever group is active.
    WorldScope world;
    Context &ctx = context();
    if (backend != GRADCOMM_BACKEND_CPU && backend != GRADCOMM_BACKEND_CUDA)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "unknown backend " +
                           std::to_string(static_cast<int>(backend)));
    if (backend == ctx.backend)
      return GRADCOMM_OK;
    if (!ctx.states.empty())
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "cannot switch backends with live state (" +
                           std::to_string(ctx.states.size()) +
                           " states); call gradcomm_finalize first");
    if (backend == GRADCOMM_BACKEND_CPU) {
      releaseCudaBackend();
      ctx.backend = backend;
      return GRADCOMM_OK;
    }
    // Every rank loads and prepares (local work), then all agree before
    // the collective part: a rank that failed fails every rank with its
    // message, and no rank waits for NCCL's unique id or in
    // ncclCommInitRank for a peer that will never come.
    // (The node split is collective: every rank makes it first.)
    int localRank = 0;
    GRADCOMM_RETURN_IF_ERROR(nodeLocalRank(call, &localRank));
    std::string why;
    const CudaBackendTable *table = loadCudaBackend(why);
    gradcomm_status local = GRADCOMM_OK;
    char error[kErrorSize] = {0};
    char uniqueId[kNcclUniqueIdBytes] = {0};
    if (!table)
      local = call.fail(GRADCOMM_ERR_UNSUPPORTED, why);
    else if (table->prepare(ctx.rank, localRank, ctx.ncclComm, ctx.cudaStream,
                            uniqueId, error) != 0)
      local = call.fail(GRADCOMM_ERR_UNSUPPORTED,
                        std::string("cannot start the cuda backend: ") + error);
    gradcomm_status agreed = agreeOnStatus(call, local);
    if (agreed == GRADCOMM_OK) {
      agreed = broadcast(call, uniqueId, sizeof(uniqueId), Element::Byte, 0,
                         "broadcast (NCCL unique id)");
      local = agreed;
      if (local == GRADCOMM_OK &&
          table->connect(ctx.rank, ctx.size, uniqueId, ctx.timeoutSeconds,
                         error) != 0)
        local =
            call.fail(GRADCOMM_ERR_UNSUPPORTED,
                      std::string("cannot start the cuda backend: ") + error);
      agreed = agreeOnStatus(call, local);
    }
    if (agreed != GRADCOMM_OK) {
      if (table)
        table->shutdown();
      return agreed;
    }
    ctx.cuda = table;
    ctx.selected = cudaBackendOver(table);
    ctx.backend = backend;
    // Groups made before: their NCCL communicators, split in spec order
    // (the same on every rank). The scope's end makes the active group's
    // the one calls run in.
    for (auto &entry : ctx.groups) {
      gradcomm_status split = splitBackendGroup(call, *entry.second);
      if (split != GRADCOMM_OK) {
        releaseCudaBackend();
        ctx.backend = GRADCOMM_BACKEND_CPU;
        return split;
      }
    }
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_get_backend(gradcomm_backend *backend) {
  return guarded("get_backend", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "backend", backend));
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    *backend = context().backend;
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_cuda_use_handles(void *ncclComm, void *cudaStream) {
  return guarded("cuda_use_handles", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    Context &ctx = context();
    if (ctx.cuda)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "the cuda backend is already running; hand in the "
                       "handles before selecting it");
    ctx.ncclComm = ncclComm;
    ctx.cudaStream = cudaStream;
    return GRADCOMM_OK;
  });
}
