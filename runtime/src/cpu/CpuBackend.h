//===- CpuBackend.h - The CPU backend: host memory and kernels -*- C++ -*-===//
//
// Part of the GradComm project.
//
// Backend.h's table on the CPU. CpuBackend.cpp holds memory, the dense
// all-reduce, gossip and the sparse all-reduce; CpuCompress.cpp the
// selecting steps (ScaleCom, local top-k).
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_CPUBACKEND_H
#define GRADCOMM_RUNTIME_CPUBACKEND_H

#include "Backend.h"

#include <vector>

namespace gradcomm {

class CpuBackend final : public Backend {
public:
  const char *name() const override { return "cpu"; }
  bool tensorsOnHost() const override { return true; }
  bool starts(StartedForm) const override { return true; }

  gradcomm_status splitGroup(const Call &, int, int,
                             void **group) const override {
    *group = nullptr;
    return GRADCOMM_OK;
  }
  void useGroup(void *) const override {}
  void freeGroup(void *) const override {}

  gradcomm_status allocate(const Call &call, int64_t count,
                           float **memory) const override;
  void release(float *memory) const override;
  gradcomm_status copyToHost(const Call &call, void *host, const void *data,
                             size_t bytes) const override;
  gradcomm_status copyFromHost(const Call &call, void *data, const void *host,
                               size_t bytes) const override;
  gradcomm_status zero(const Call &call, float *data,
                       int64_t count) const override;
  gradcomm_status exceedsLimit(const Call &call, const float *input,
                               int64_t count, float limit,
                               bool *result) const override;

  gradcomm_status denseAllReduce(const Call &call, float *data, int64_t count,
                                 bool average) const override;
  gradcomm_status
  startDenseAllReduce(const Call &call, float *data, int64_t count,
                      bool average, gradcomm_request_s &request) const override;
  gradcomm_status gossip(const Call &call, float *x, int64_t count, int peer,
                         float mixing) const override;
  gradcomm_status startGossip(const Call &call, float *x, int64_t count,
                              int peer, float mixing,
                              gradcomm_request_s &request) const override;

  IndexCoding indexCoding(const CompressStep &step) const override;
  gradcomm_status prepareCompress(const Call &call, const CompressStep &step,
                                  Prepared &prepared) const override;
  gradcomm_status scalecom(const Call &call, const CompressStep &step,
                           const Prepared &prepared, float beta, bool average,
                           float *out) const override;
  gradcomm_status startScalecom(const Call &call, const CompressStep &step,
                                const Prepared &prepared, float beta,
                                bool average, float *out,
                                gradcomm_request_s &request) const override;
  gradcomm_status compress(const Call &call, const CompressStep &step,
                           const Prepared &prepared, float *values,
                           int64_t *indices) const override;
  gradcomm_status compressAndUpdate(const Call &call, const CompressStep &step,
                                    const Prepared &prepared, float beta,
                                    float *values,
                                    int64_t *indices) const override;
  gradcomm_status sparseAllReduce(const Call &call, const float *values,
                                  const int64_t *indices, int64_t k, float *out,
                                  int64_t count, bool average) const override;
  gradcomm_status
  startSparseAllReduce(const Call &call, const float *values,
                       const int64_t *indices, int64_t k, float *out,
                       int64_t count, bool average,
                       gradcomm_request_s &request) const override;
  gradcomm_status memoryUpdate(const Call &call, State &state,
                               const float *grad, int64_t count,
                               const int64_t *indices, int64_t k,
                               float beta) const override;

  gradcomm_status prepareLocalTopk(const Call &call, const CompressStep &step,
                                   Prepared &prepared) const override;
  gradcomm_status localTopk(const Call &call, const CompressStep &step,
                            bool average, float *out,
                            int64_t *distinct) const override;
  gradcomm_status
  startLocalTopk(const Call &call, const CompressStep &step, bool average,
                 float *out, gradcomm_request_s &request,
                 std::function<void(int64_t)> finish) const override;
};

/// The mean of `values` over the ranks when `average` (divided in place).
void averageOverGroup(float *values, int64_t count, bool average);

/// Local top-k's gathered blocks (`size` blocks of k `values` at their
/// `indices`, in rank order) added into `out` in rank order, so every rank
/// computes the same bits; for a mean the union's entries are divided by
/// `size`. Sorts `indices`; returns the union's size.
int64_t sumBlocksInRankOrder(const float *values, std::vector<int64_t> &indices,
                             float *out, bool average, int size);

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_CPUBACKEND_H
