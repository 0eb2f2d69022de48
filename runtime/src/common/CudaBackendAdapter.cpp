//===- CudaBackendAdapter.cpp - The CUDA backend's table behind Backend.h -===//
//
// Part of the GradComm project.
//
// libgradcomm_runtime links neither CUDA nor NCCL: the CUDA backend's work
// is in libgradcomm_runtime_cuda.so (src/cuda), loaded on demand, whose C
// table (CudaBackendTable.h) this adapter puts behind Backend.h's
// operations. A blocking call completes on the device before it returns.
// The started dense all-reduce, ScaleCom step, gossip exchange and sparse
// all-reduce enqueue the same work on the backend's stream and return; the
// wait polls the event recorded after it under the watchdog (never a
// stream synchronize that could wait forever). The started local top-k
// and elastic average are refused before anything is validated.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Wire.h"

#include <numeric>
#include <vector>

using namespace gradcomm;

static_assert(kWireFloat32 == GRADCOMM_WIRE_F32 &&
                  kWireBfloat16 == GRADCOMM_WIRE_BF16 &&
                  kWireFloat16 == GRADCOMM_WIRE_F16,
              "CudaBackendTable.h's wire values are runtime.h's");

namespace {

class CudaBackend final : public Backend {
public:
  /// The loaded table while the backend runs; nullptr after shutdown.
  const CudaBackendTable *table = nullptr;

  const char *name() const override { return "cuda"; }
  bool tensorsOnHost() const override { return false; }
  bool starts(StartedForm form) const override {
    return form == StartedForm::DenseAllReduce || form == StartedForm::Gossip ||
           form == StartedForm::Scalecom ||
           form == StartedForm::SparseAllReduce ||
           form == StartedForm::LocalTopk;
  }

  gradcomm_status splitGroup(const Call &call, int color, int key,
                             void **group) const override {
    char error[kErrorSize] = {0};
    return status(call, table->splitGroup(color, key, group, error), error);
  }
  void useGroup(void *group) const override {
    if (table)
      table->useGroup(group);
  }
  void freeGroup(void *group) const override {
    if (table && group)
      table->freeGroup(group);
  }

  gradcomm_status allocate(const Call &call, int64_t count,
                           float **memory) const override {
    char error[kErrorSize] = {0};
    return status(call, table->allocate(memory, count, error), error);
  }
  void release(float *memory) const override {
    // Memory outlives a stopped backend only when its context is gone.
    if (table)
      table->release(memory);
  }
  gradcomm_status copyToHost(const Call &call, void *host, const void *data,
                             size_t bytes) const override {
    char error[kErrorSize] = {0};
    return status(call, table->bytesToHost(host, data, bytes, error), error);
  }
  gradcomm_status copyFromHost(const Call &call, void *data, const void *host,
                               size_t bytes) const override {
    char error[kErrorSize] = {0};
    return status(call, table->bytesFromHost(data, host, bytes, error), error);
  }
  gradcomm_status zero(const Call &call, float *data,
                       int64_t count) const override {
    char error[kErrorSize] = {0};
    return status(call, table->zero(data, count, error), error);
  }
  gradcomm_status exceedsLimit(const Call &call, const float *input,
                               int64_t count, float limit,
                               bool *result) const override {
    *result = false;
    if (count <= 0)
      return GRADCOMM_OK;
    int found = 0;
    char error[kErrorSize] = {0};
    GRADCOMM_RETURN_IF_ERROR(status(
        call, table->anyNonFinite(nullptr, input, count, limit, &found, error),
        error));
    *result = found != 0;
    return GRADCOMM_OK;
  }

  gradcomm_status denseAllReduce(const Call &call, float *data, int64_t count,
                                 bool average) const override {
    return deviceDenseAllReduceWire(call, data, count, average,
                                    GRADCOMM_WIRE_F32);
  }
  gradcomm_status
  startDenseAllReduce(const Call &call, float *data, int64_t count,
                      bool average,
                      gradcomm_request_s &request) const override {
    return startDeviceDenseAllReduceWire(call, data, count, average,
                                         GRADCOMM_WIRE_F32, request);
  }
  bool narrowsOnDevice() const override { return true; }
  gradcomm_status deviceDenseAllReduceWire(const Call &call, float *data,
                                           int64_t count, bool average,
                                           gradcomm_wire wire) const override {
    char error[kErrorSize] = {0};
    return status(
        call, table->denseAllReduce(data, count, average, wire, error), error);
  }
  gradcomm_status
  startDeviceDenseAllReduceWire(const Call &call, float *data, int64_t count,
                                bool average, gradcomm_wire wire,
                                gradcomm_request_s &request) const override {
    char error[kErrorSize] = {0};
    void *completion = nullptr;
    GRADCOMM_RETURN_IF_ERROR(
        status(call,
               table->startDenseAllReduce(data, count, average, wire,
                                          &completion, error),
               error));
    awaitDevice(request, completion, "ncclAllReduce (started)");
    return GRADCOMM_OK;
  }
  gradcomm_status gossip(const Call &call, float *x, int64_t count, int peer,
                         float mixing) const override {
    return deviceGossipWire(call, x, count, peer, mixing, GRADCOMM_WIRE_F32);
  }
  gradcomm_status startGossip(const Call &call, float *x, int64_t count,
                              int peer, float mixing,
                              gradcomm_request_s &request) const override {
    return startDeviceGossipWire(call, x, count, peer, mixing,
                                 GRADCOMM_WIRE_F32, request);
  }
  gradcomm_status deviceGossipWire(const Call &call, float *x, int64_t count,
                                   int peer, float mixing,
                                   gradcomm_wire wire) const override {
    char error[kErrorSize] = {0};
    return status(call, table->gossip(x, count, peer, mixing, wire, error),
                  error);
  }
  gradcomm_status
  startDeviceGossipWire(const Call &call, float *x, int64_t count, int peer,
                        float mixing, gradcomm_wire wire,
                        gradcomm_request_s &request) const override {
    char error[kErrorSize] = {0};
    void *completion = nullptr;
    GRADCOMM_RETURN_IF_ERROR(status(
        call,
        table->startGossip(x, count, peer, mixing, wire, &completion, error),
        error));
    awaitDevice(request, completion, "ncclSend/ncclRecv (started gossip)");
    request.peer = peer;
    return GRADCOMM_OK;
  }

  gradcomm_status deviceElasticAverage(const Call &call, float *x,
                                       float *center, int64_t count,
                                       float alpha, bool first,
                                       gradcomm_wire wire) const override {
    char error[kErrorSize] = {0};
    return status(
        call,
        table->elasticAverage(x, center, count, alpha, first, wire, error),
        error);
  }

  gradcomm_status deviceWiden(const Call &call, const uint16_t *in, float *out,
                              int64_t count,
                              gradcomm_wire wire) const override {
    char error[kErrorSize] = {0};
    return status(call, table->widenValues(in, out, count, wire, error), error);
  }
  gradcomm_status deviceNarrow(const Call &call, const float *in, uint16_t *out,
                               int64_t count,
                               gradcomm_wire wire) const override {
    char error[kErrorSize] = {0};
    return status(call, table->narrowValues(in, out, count, wire, error),
                  error);
  }

  gradcomm_status prepareCompress(const Call &call, const CompressStep &step,
                                  Prepared &prepared) const override {
    return scanGradient(call, step, prepared);
  }
  gradcomm_status scalecom(const Call &call, const CompressStep &step,
                           const Prepared &, float beta, bool average,
                           float *out) const override {
    char error[kErrorSize] = {0};
    return status(call,
                  table->scalecom(step.state.data(), step.grad, out, step.count,
                                  step.k, step.selection, step.chunkSize, beta,
                                  average, step.leader, wireIndexBytes(step),
                                  step.wire, error),
                  error);
  }
  gradcomm_status startScalecom(const Call &call, const CompressStep &step,
                                const Prepared &, float beta, bool average,
                                float *out,
                                gradcomm_request_s &request) const override {
    char error[kErrorSize] = {0};
    void *completion = nullptr;
    GRADCOMM_RETURN_IF_ERROR(status(
        call,
        table->startScalecom(step.state.data(), step.grad, out, step.count,
                             step.k, step.selection, step.chunkSize, beta,
                             average, step.leader, wireIndexBytes(step),
                             step.wire, &completion, error),
        error));
    awaitDevice(request, completion, "ScaleCom step on the device (started)");
    return GRADCOMM_OK;
  }
  gradcomm_status compress(const Call &call, const CompressStep &step,
                           const Prepared &, float *values,
                           int64_t *indices) const override {
    char error[kErrorSize] = {0};
    return status(call,
                  table->compress(step.state.data(), step.grad, step.count,
                                  step.k, step.selection, step.chunkSize,
                                  step.leader, wireIndexBytes(step), values,
                                  indices, error),
                  error);
  }
  gradcomm_status sparseAllReduce(const Call &call, const float *values,
                                  const int64_t *indices, int64_t k, float *out,
                                  int64_t count, bool average) const override {
    char error[kErrorSize] = {0};
    return status(
        call,
        table->sparseAllReduce(values, indices, k, out, count, average, error),
        error);
  }
  gradcomm_status
  startSparseAllReduce(const Call &call, const float *values,
                       const int64_t *indices, int64_t k, float *out,
                       int64_t count, bool average,
                       gradcomm_request_s &request) const override {
    char error[kErrorSize] = {0};
    void *completion = nullptr;
    GRADCOMM_RETURN_IF_ERROR(
        status(call,
               table->startSparseAllReduce(values, indices, k, out, count,
                                           average, &completion, error),
               error));
    awaitDevice(request, completion, "ncclAllReduce (started sparse)");
    return GRADCOMM_OK;
  }
  gradcomm_status memoryUpdate(const Call &call, State &state,
                               const float *grad, int64_t count,
                               const int64_t *indices, int64_t k,
                               float beta) const override {
    char error[kErrorSize] = {0};
    return status(
        call,
        table->memoryUpdate(state.data(), grad, count, indices, k, beta, error),
        error);
  }

  gradcomm_status prepareLocalTopk(const Call &call, const CompressStep &step,
                                   Prepared &prepared) const override {
    return scanGradient(call, step, prepared);
  }
  gradcomm_status localTopk(const Call &call, const CompressStep &step,
                            bool average, float *out,
                            int64_t *distinct) const override {
    char error[kErrorSize] = {0};
    return status(call,
                  table->localTopk(step.state.data(), step.grad, out,
                                   step.count, step.k, average, step.wire,
                                   distinct, error),
                  error);
  }
  gradcomm_status
  startLocalTopk(const Call &call, const CompressStep &step, bool average,
                 float *out, gradcomm_request_s &request,
                 std::function<void(int64_t)> finish) const override {
    char error[kErrorSize] = {0};
    void *completion = nullptr;
    GRADCOMM_RETURN_IF_ERROR(status(
        call,
        table->startLocalTopk(step.state.data(), step.grad, out, step.count,
                              step.k, average, step.wire, &completion, error),
        error));
    awaitDevice(request, completion, "ncclAllGather (started local top-k)");
    // The wait runs this after the polls finished, before the release.
    const CudaBackendTable *loaded = table;
    request.finish = [loaded, completion, finish = std::move(finish)] {
      finish(loaded->completionValue(completion));
    };
    return GRADCOMM_OK;
  }

  gradcomm_status deviceClip(const Call &call, const float *grad, float *out,
                             int64_t count, float clip) const override {
    char error[kErrorSize] = {0};
    return status(call, table->clipInput(grad, out, count, clip, error), error);
  }
  gradcomm_status deviceVelocity(const Call &call, const float *velocity,
                                 const float *input, float *next, float *sent,
                                 int64_t count, float momentum) const override {
    char error[kErrorSize] = {0};
    return status(call,
                  table->velocityInput(velocity, input, next, sent, count,
                                       momentum, error),
                  error);
  }
  gradcomm_status deviceCommitVelocity(const Call &call, float *velocity,
                                       const float *next, int64_t count,
                                       bool masked) const override {
    char error[kErrorSize] = {0};
    return status(call,
                  table->commitVelocity(velocity, next, count, masked, error),
                  error);
  }
  gradcomm_status deviceReduceScatter(const Call &call, const float *data,
                                      float *shard, int64_t count, bool average,
                                      gradcomm_wire wire) const override {
    char error[kErrorSize] = {0};
    return status(
        call, table->reduceScatter(data, shard, count, average, wire, error),
        error);
  }
  gradcomm_status deviceScalecomReduceScatter(const Call &call,
                                              const CompressStep &step,
                                              const Prepared &, float beta,
                                              bool average,
                                              float *shard) const override {
    char error[kErrorSize] = {0};
    return status(call,
                  table->scalecomReduceScatter(
                      step.state.data(), step.grad, shard, step.count, step.k,
                      step.selection, step.chunkSize, beta, average,
                      step.leader, wireIndexBytes(step), step.wire, error),
                  error);
  }

private:
  static gradcomm_status status(const Call &call, int rc, const char *error) {
    if (rc == 0)
      return GRADCOMM_OK;
    return call.fail(GRADCOMM_ERR_INTERNAL,
                     std::string("cuda backend: ") + error);
  }
  /// The wait polls `completion` (the event after the enqueued work) and
  /// frees it whatever happens.
  void awaitDevice(gradcomm_request_s &request, void *completion,
                   const char *what) const {
    const CudaBackendTable *loaded = table;
    request.what = what;
    request.poll = [loaded, completion](const Call &call, bool *finished) {
      char error[kErrorSize] = {0};
      int done = 0;
      GRADCOMM_RETURN_IF_ERROR(
          status(call, loaded->poll(completion, &done, error), error));
      *finished = done != 0;
      return GRADCOMM_OK;
    };
    alsoRelease(request, [loaded, completion] { loaded->forget(completion); });
  }
  /// The device scan of m + g against the summed input limit, as the CPU
  /// backend's scan (the kernels select after the agreement, so it is a
  /// pass of its own).
  gradcomm_status scanGradient(const Call &call, const CompressStep &step,
                               Prepared &prepared) const {
    prepared.nonFinite = false;
    if (!scanForNonFinite() || step.count <= 0)
      return GRADCOMM_OK;
    int found = 0;
    char error[kErrorSize] = {0};
    GRADCOMM_RETURN_IF_ERROR(
        status(call,
               table->anyNonFinite(step.state.data(), step.grad, step.count,
                                   wireInputLimit(step.wire, /*summed=*/true),
                                   &found, error),
               error));
    prepared.nonFinite = found != 0;
    return GRADCOMM_OK;
  }
};

} // namespace

const Backend *gradcomm::cudaBackendOver(const CudaBackendTable *table) {
  // Never destroyed, like the context whose states it owns memory of.
  static CudaBackend *backend = new CudaBackend;
  backend->table = table;
  return table ? backend : nullptr;
}
