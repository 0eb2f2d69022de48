//===- Backend.h - One table of operations per backend ----------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Every public entry point runs the same four steps once: validate its
// arguments (collectively, so one rank's mistake fails every rank), let the
// selected backend prepare what must be known before the agreement (the
// non-finite scan; on the CPU, the ScaleCom leader's selection, whose first
// pass the scan rides along), agree (checkConsistency), dispatch the rest to
// the backend, and count. The backend is this table: where tensors live, how
// they are scanned, moved and reduced. The CPU backend (src/cpu/CpuBackend.*:
// host memory, the kernels of Kernels.h, MPI) and the CUDA backend
// (src/common/CudaBackendAdapter.cpp: device memory, the dlopen'ed
// CudaBackendTable, NCCL) implement it in their own files, as MLIR's
// ExecutionEngine implements one mgpu* ABI per GPU runtime.
//
// What only host memory allows (the batched dense all-reduce, elastic
// averaging, the asynchronous one-sided ops, groups of grid axes) is not in
// the table: those entry points refuse a backend whose tensors are not on
// the host (requireHostTensors) during validation, before reading anything.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_BACKEND_H
#define GRADCOMM_RUNTIME_BACKEND_H

#include "Internal.h"

#include <array>
#include <cstdint>
#include <optional>

namespace gradcomm {

/// One compressing step (ScaleCom or local top-k) on one rank, as the
/// entry point validated it.
struct CompressStep {
  State &state;
  const float *grad;
  int64_t count;
  int64_t k;
  gradcomm_selection selection;
  /// The chunk length with chunk selection, else 0.
  int64_t chunkSize;
  /// The rank whose selection every rank uses this step (step mod n).
  int leader;
  /// The type the k values travel in (host tensors, or a backend that
  /// narrowsOnDevice(); the entry points refuse 16 bits elsewhere).
  gradcomm_wire wire = GRADCOMM_WIRE_F32;
  /// Selection per segment (exact, CPU backend): `segments` consecutive
  /// runs ending at segmentEnds[s], the top segmentK[s] of each (k is
  /// their sum); none: one selection over the whole tensor.
  const int64_t *segmentEnds = nullptr;
  const int64_t *segmentK = nullptr;
  int64_t segments = 0;
};

/// Bytes per index in a fixed-width coding: the offset inside its chunk (1
/// or 2 bytes) for chunk selection, int32 below 2^31 elements, else int64.
int wireIndexBytes(const CompressStep &step);

/// What a backend prepared before a compressing step's agreement.
struct Prepared {
  /// Some |m + g| (or |g|) exceeded the summed input limit, or is NaN.
  bool nonFinite = false;
  /// The leader's indices ride in the agreement's message (CPU backend,
  /// small k) when `payloadBytes` is not 0: that many bytes of `sent` on
  /// the leader reach `received` on every rank once the ranks agree.
  size_t payloadBytes = 0;
  bool foldsIndices() const { return payloadBytes > 0; }
  /// Set before prepareCompress when the caller's own pass over the input
  /// already took the non-finite scan (the largest |m + g| key, as
  /// cpu::maxMagnitudeKeySum gives it): a host backend uses it instead of
  /// a pass of its own.
  std::optional<uint32_t> inputScan;
  std::array<uint8_t, kAgreementPayloadBytes> sent{};
  std::array<uint8_t, kAgreementPayloadBytes> received{};
};

/// The operations a backend runs. Pointers are where the backend keeps
/// tensors (host or device); `call` names the entry point in messages.
/// A `start*` entry fills `request` (its MPI requests or its `poll`, and
/// the `finish` that runs at gradcomm_wait) instead of completing; the
/// started entry points ask `starts(form)` before validating anything, and
/// a form a backend does not start returns GRADCOMM_ERR_UNSUPPORTED.
class Backend {
public:
  virtual ~Backend() = default;

  /// "cpu" or "cuda", for messages.
  virtual const char *name() const = 0;
  /// Tensors are host memory the runtime may read and pass to MPI.
  virtual bool tensorsOnHost() const = 0;
  /// The started form `form` (gradcomm_*_start_f32) runs on this backend.
  virtual bool starts(StartedForm form) const = 0;

  // Memory: states, compiled code's buffers, staging.
  // Groups of grid axes, for a backend with a transport of its own (NCCL):
  // its communicator for the ranks of `color` ordered by `key` (collective:
  // every rank splits the same groups in the same order), the one the next
  // calls run in (nullptr: every rank), and its release. The CPU backend
  // communicates in the group's MPI communicator and needs none.
  virtual gradcomm_status splitGroup(const Call &call, int color, int key,
                                     void **group) const = 0;
  virtual void useGroup(void *group) const = 0;
  virtual void freeGroup(void *group) const = 0;

  /// `count` zeroed floats.
  virtual gradcomm_status allocate(const Call &call, int64_t count,
                                   float **memory) const = 0;
  virtual void release(float *memory) const = 0;
  virtual gradcomm_status copyToHost(const Call &call, void *host,
                                     const void *data, size_t bytes) const = 0;
  virtual gradcomm_status copyFromHost(const Call &call, void *data,
                                       const void *host,
                                       size_t bytes) const = 0;
  virtual gradcomm_status zero(const Call &call, float *data,
                               int64_t count) const = 0;
  /// `*result` = true when some |input| is above `limit` or NaN.
  virtual gradcomm_status exceedsLimit(const Call &call, const float *input,
                                       int64_t count, float limit,
                                       bool *result) const = 0;

  // Dense all-reduce and gossip, after the agreement.
  virtual gradcomm_status denseAllReduce(const Call &call, float *data,
                                         int64_t count, bool average) const = 0;
  virtual gradcomm_status
  startDenseAllReduce(const Call &call, float *data, int64_t count,
                      bool average, gradcomm_request_s &request) const = 0;
  /// x = (1 - mixing) x + mixing x_peer.
  virtual gradcomm_status gossip(const Call &call, float *x, int64_t count,
                                 int peer, float mixing) const = 0;
  virtual gradcomm_status startGossip(const Call &call, float *x, int64_t count,
                                      int peer, float mixing,
                                      gradcomm_request_s &request) const = 0;

  // A 16-bit wire (Wire.h) on the backend's own memory. A host backend's
  // 16-bit wire is Wire.cpp's, around its float32 calls; a device backend
  // that narrows on the device says so, and then its dense all-reduce and
  // gossip exchange below, its fused ScaleCom step and its local top-k
  // (CompressStep::wire: the k values) carry the wire. The defaults
  // refuse.
  virtual bool narrowsOnDevice() const { return false; }
  virtual gradcomm_status deviceDenseAllReduceWire(const Call &call,
                                                   float *data, int64_t count,
                                                   bool average,
                                                   gradcomm_wire wire) const;
  virtual gradcomm_status
  startDeviceDenseAllReduceWire(const Call &call, float *data, int64_t count,
                                bool average, gradcomm_wire wire,
                                gradcomm_request_s &request) const;
  virtual gradcomm_status deviceGossipWire(const Call &call, float *x,
                                           int64_t count, int peer,
                                           float mixing,
                                           gradcomm_wire wire) const;
  virtual gradcomm_status
  startDeviceGossipWire(const Call &call, float *x, int64_t count, int peer,
                        float mixing, gradcomm_wire wire,
                        gradcomm_request_s &request) const;

  // ScaleCom. The leader's indices travel as indexCoding(step) says.
  /// Fixed width (wireIndexBytes) by default; the CPU backend sends an
  /// exact selection's indices as 16-bit gaps when that is smaller.
  virtual IndexCoding indexCoding(const CompressStep &step) const;
  /// Before the agreement: the non-finite scan (of m + g on the CPU, where
  /// it rides along the leader's selection; of g on CUDA) and, when the
  /// indices fold into the agreement, the leader's selection.
  virtual gradcomm_status prepareCompress(const Call &call,
                                          const CompressStep &step,
                                          Prepared &prepared) const = 0;
  /// The fused step after the agreement: the leader's indices to every
  /// rank, gather + low-pass update of the memory, the k values reduced
  /// (sum, or mean) and scattered into a zeroed `out`. The entry point
  /// moves the state's step on.
  virtual gradcomm_status scalecom(const Call &call, const CompressStep &step,
                                   const Prepared &prepared, float beta,
                                   bool average, float *out) const = 0;
  virtual gradcomm_status startScalecom(const Call &call,
                                        const CompressStep &step,
                                        const Prepared &prepared, float beta,
                                        bool average, float *out,
                                        gradcomm_request_s &request) const = 0;
  /// The unfused compress: the leader's indices into `indices` and this
  /// rank's (m + g) at them into `values`; memory unchanged.
  virtual gradcomm_status compress(const Call &call, const CompressStep &step,
                                   const Prepared &prepared, float *values,
                                   int64_t *indices) const = 0;
  /// compress and memoryUpdate of the same step: the leader's indices into
  /// `indices`, this rank's (m + g) at them into `values`, then the
  /// low-pass update of the memory. The default runs the two; a backend
  /// overrides it with the fused step's single pass (the compressed
  /// reduce-scatter's step before its reduction).
  virtual gradcomm_status compressAndUpdate(const Call &call,
                                            const CompressStep &step,
                                            const Prepared &prepared,
                                            float beta, float *values,
                                            int64_t *indices) const;
  /// The sum (or mean) of `values` over the ranks, scattered into a zeroed
  /// `out` at `indices`.
  virtual gradcomm_status sparseAllReduce(const Call &call, const float *values,
                                          const int64_t *indices, int64_t k,
                                          float *out, int64_t count,
                                          bool average) const = 0;
  virtual gradcomm_status
  startSparseAllReduce(const Call &call, const float *values,
                       const int64_t *indices, int64_t k, float *out,
                       int64_t count, bool average,
                       gradcomm_request_s &request) const = 0;
  /// m = beta (m + g) at `indices` (ascending), m + g elsewhere.
  virtual gradcomm_status memoryUpdate(const Call &call, State &state,
                                       const float *grad, int64_t count,
                                       const int64_t *indices, int64_t k,
                                       float beta) const = 0;

  // Local top-k with all-gather (the baseline).
  /// Before the agreement: the non-finite scan (and, on the CPU, this
  /// rank's own selection, which the scan rides along).
  virtual gradcomm_status prepareLocalTopk(const Call &call,
                                           const CompressStep &step,
                                           Prepared &prepared) const = 0;
  /// After it: plain error feedback, the k values and indices of every
  /// rank gathered and summed in rank order into a zeroed `out`;
  /// `*distinct`: the union's size.
  virtual gradcomm_status localTopk(const Call &call, const CompressStep &step,
                                    bool average, float *out,
                                    int64_t *distinct) const = 0;
  /// `finish(distinct)` runs at the wait, after the sum.
  virtual gradcomm_status
  startLocalTopk(const Call &call, const CompressStep &step, bool average,
                 float *out, gradcomm_request_s &request,
                 std::function<void(int64_t)> finish) const = 0;

  // The training recipe's parts for tensors not on the host (ops/ScaleCom.cpp
  // runs them itself on host tensors), in the backend's order: they run
  // before (clip, velocity) and after (the commit) the fused step. The
  // defaults refuse (GRADCOMM_ERR_UNSUPPORTED).
  /// out = grad scaled to an L2 norm of at most `clip`, else a copy.
  virtual gradcomm_status deviceClip(const Call &call, const float *grad,
                                     float *out, int64_t count,
                                     float clip) const;
  /// next = momentum velocity + input; with `sent`, sent = input +
  /// momentum next (Nesterov).
  virtual gradcomm_status
  deviceVelocity(const Call &call, const float *velocity, const float *input,
                 float *next, float *sent, int64_t count, float momentum) const;
  /// velocity = next, zeroed at the last fused step's indices when
  /// `masked`.
  virtual gradcomm_status deviceCommitVelocity(const Call &call,
                                               float *velocity,
                                               const float *next, int64_t count,
                                               bool masked) const;

  // Sharded training where the tensors are not on the host. Host tensors
  // are reduce-scattered by the transport (ops/ReduceScatter.cpp); a device
  // backend runs its own collectives. Blocking; the defaults refuse
  // (GRADCOMM_ERR_UNSUPPORTED).
  /// After the agreement: this rank's shard (gradcomm_shard_range) of the
  /// sum (or mean) of `data` into `shard`, the values travelling as `wire`
  /// (16 bits where narrowsOnDevice()).
  virtual gradcomm_status deviceReduceScatter(const Call &call,
                                              const float *data, float *shard,
                                              int64_t count, bool average,
                                              gradcomm_wire wire) const;
  /// After the agreement: ScaleCom's step with the k values
  /// reduce-scattered (as step.wire); `shard` gets zeros and the sums (or
  /// means) at the selected indices in it. The entry point moves the
  /// state's step on.
  virtual gradcomm_status deviceScalecomReduceScatter(const Call &call,
                                                      const CompressStep &step,
                                                      const Prepared &prepared,
                                                      float beta, bool average,
                                                      float *shard) const;

  /// Elastic averaging where the tensors are not on the host (host tensors:
  /// ops/ElasticAverage.cpp over the transport), blocking, after the
  /// agreement: with `first`, center = the mean of x over the ranks; then
  /// the exchange: the differences x - center summed over the ranks as
  /// `wire`, x -= alpha (x - center), center += alpha sum. The default
  /// refuses (GRADCOMM_ERR_UNSUPPORTED).
  virtual gradcomm_status deviceElasticAverage(const Call &call, float *x,
                                               float *center, int64_t count,
                                               float alpha, bool first,
                                               gradcomm_wire wire) const;

  /// Compiled code's 16-bit tensors in the backend's memory (ops/Memref.cpp;
  /// host memory is converted there): `count` values of the 16-bit `wire`
  /// widened into float32, and narrowed back (to nearest even). Where
  /// narrowsOnDevice(); the defaults refuse.
  virtual gradcomm_status deviceWiden(const Call &call, const uint16_t *in,
                                      float *out, int64_t count,
                                      gradcomm_wire wire) const;
  virtual gradcomm_status deviceNarrow(const Call &call, const float *in,
                                       uint16_t *out, int64_t count,
                                       gradcomm_wire wire) const;
};

/// The selected backend (the CPU one until gradcomm_set_backend(CUDA)).
const Backend &backend();
/// The CPU backend, always available (src/cpu; the core reaches it as
/// extensions().hostBackend).
const Backend &cpuBackend();

/// A host view of `bytes` at `data` (where the backend keeps tensors):
/// `data` itself on a host backend, else a copy staged in `staging`.
gradcomm_status hostView(const Call &call, const void *data, size_t bytes,
                         std::vector<uint8_t> &staging, const void **host);

/// GRADCOMM_ERR_UNSUPPORTED "<what> runs on the CPU backend only" unless
/// the selected backend's tensors are host memory.
gradcomm_status requireHostTensors(const Call &call, const std::string &what);

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_BACKEND_H
