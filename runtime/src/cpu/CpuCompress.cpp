//===- CpuCompress.cpp - The CPU backend's ScaleCom and local top-k -------===//
//
// Part of the GradComm project.
//
// docs/design/architecture.md section 2. The fused step streams the memory
// once per step on every rank (gather + low-pass update + zeroing the
// output in one pass); the leader adds its selection pass(es) before it.
// The leader's exact selection runs before the agreement because the
// non-finite scan rides along its first pass; its indices then travel in
// the agreement's message when they fit, else in a broadcast of their own.
//
//===----------------------------------------------------------------------===//

#include "CpuBackend.h"
#include "Kernels.h"
#include "Wire.h"

#include <algorithm>
#include <memory>
#include <vector>

using namespace gradcomm;

namespace {

bool isLeader(const CompressStep &step) {
  return context().rank == step.leader;
}

/// An exact selection's k indices as 16-bit gaps when that is smaller than
/// int32s: about half the index bytes at ratios up to about 65535 / 2.
IndexCoding indexCodingOf(const CompressStep &step) {
  return smallestIndexCoding(step.count, step.k, wireIndexBytes(step),
                             step.chunkSize);
}

/// The leader's indices to every rank, into `state.indices`. With `update`
/// (the fused step) a chunk leader that selects here also applies the
/// memory update, fills `values` and zeroes `out` (when not null) in the
/// same pass; `*updated` says so.
gradcomm_status exchangeIndices(const Call &call, const CompressStep &step,
                                const Prepared &prepared, bool update,
                                float beta, float *out, bool *updated) {
  State &state = step.state;
  const IndexCoding coding = indexCodingOf(step);
  *updated = false;
  if (prepared.foldsIndices()) {
    decodeIndices(coding, prepared.received.data(), state.indices.data());
    return GRADCOMM_OK;
  }
  if (isLeader(step) && step.selection == GRADCOMM_SELECT_CHUNK) {
    if (update) {
      cpu::selectChunkAndUpdate(state.data(), step.grad, step.count,
                                step.chunkSize, beta, state.indices.data(),
                                state.values.data(), out);
      *updated = true;
    } else {
      cpu::selectChunk(state.data(), step.grad, step.count, step.chunkSize,
                       state.indices.data());
    }
  }
  return broadcastIndices(call, state.indices.data(), step.leader, coding);
}

/// The leader's exact selection per segment (CompressStep::segments): each
/// segment's top segmentK[s] of |m + g| (all of a segment whose k is its
/// length, none where it is 0), concatenated, so ascending. Returns the
/// largest |m + g| over the whole tensor, as selectExact does (over the
/// segments it does not select in only when the non-finite scan is on: a
/// pass of its own there).
uint32_t selectSegments(const CompressStep &step) {
  static thread_local cpu::SelectScratch scratch;
  State &state = step.state;
  int64_t *indices = state.indices.data();
  uint32_t largest = 0;
  int64_t begin = 0;
  for (int64_t s = 0; s < step.segments; ++s) {
    const int64_t end = step.segmentEnds[s], length = end - begin;
    const int64_t k = step.segmentK[s];
    const float *m = state.data() + begin, *g = step.grad + begin;
    uint32_t key = 0;
    if (k == 0 || k == length) {
      if (scanForNonFinite())
        key = cpu::maxMagnitudeKeySum(m, g, length);
      for (int64_t j = 0; j < k; ++j)
        indices[j] = begin + j;
    } else {
      key = cpu::selectExact(m, g, length, k, indices, scratch);
      for (int64_t j = 0; j < k; ++j)
        indices[j] += begin;
    }
    largest = std::max(largest, key);
    indices += k;
    begin = end;
  }
  return largest;
}

/// The fused step's part before the value reduction: the indices, then
/// gather + low-pass update in one pass, which leaves this rank's k values
/// in `state.values` and zeros in `out` (when not null).
gradcomm_status exchangeAndUpdate(const Call &call, const CompressStep &step,
                                  const Prepared &prepared, float beta,
                                  float *out) {
  State &state = step.state;
  bool updated = false;
  GRADCOMM_RETURN_IF_ERROR(exchangeIndices(
      call, step, prepared, /*update=*/true, beta, out, &updated));
  if (!updated)
    cpu::gatherAndUpdate(state.data(), step.grad, step.count,
                         state.indices.data(), step.k, beta,
                         state.values.data(), out);
  return GRADCOMM_OK;
}

/// The reduced values (then the mean) scattered into the zeroed `out`.
void scatterValues(const CompressStep &step, bool average, float *out) {
  State &state = step.state;
  averageOverGroup(state.values.data(), step.k, average);
  cpu::scatter(out, state.indices.data(), state.values.data(), step.k);
}

} // namespace

gradcomm_status CpuBackend::prepareCompress(const Call &,
                                            const CompressStep &step,
                                            Prepared &prepared) const {
  State &state = step.state;
  state.indices.resize(step.k);
  state.values.resize(step.k);
  uint32_t largest = 0;
  if (isLeader(step) && step.selection == GRADCOMM_SELECT_EXACT &&
      step.segments > 0) {
    largest = selectSegments(step);
  } else if (isLeader(step) && step.selection == GRADCOMM_SELECT_EXACT) {
    static thread_local cpu::SelectScratch scratch;
    // The non-finite scan rides along the histogram pass.
    largest = cpu::selectExact(state.data(), step.grad, step.count, step.k,
                               state.indices.data(), scratch);
  } else if (scanForNonFinite()) {
    largest =
        prepared.inputScan
            ? *prepared.inputScan
            : cpu::maxMagnitudeKeySum(state.data(), step.grad, step.count);
  }
  // m + g, not g: a finite gradient that overflows the memory counts.
  prepared.nonFinite =
      scanForNonFinite() &&
      cpu::exceedsLimit(largest, wireInputLimit(step.wire, /*summed=*/true));
  // The indices ride in the agreement's message when k of them fit: one
  // collective fewer per call, which is what a small tensor's call costs.
  // Every rank decides the same way once they agree on count, k, selection
  // and chunk size, which the same agreement checks.
  const IndexCoding coding = indexCodingOf(step);
  if (!context().consistencyCheck ||
      coding.bytes() > static_cast<int64_t>(kAgreementPayloadBytes))
    return GRADCOMM_OK;
  prepared.payloadBytes = static_cast<size_t>(coding.bytes());
  // So the leader selects now (a chunk leader then updates in the fused
  // gather's pass, like the other ranks: the same bits as the one-pass
  // kernel).
  if (isLeader(step) && step.selection == GRADCOMM_SELECT_CHUNK)
    cpu::selectChunk(state.data(), step.grad, step.count, step.chunkSize,
                     state.indices.data());
  if (isLeader(step))
    encodeIndices(coding, state.indices.data(), prepared.sent.data());
  return GRADCOMM_OK;
}

IndexCoding CpuBackend::indexCoding(const CompressStep &step) const {
  return indexCodingOf(step);
}

gradcomm_status CpuBackend::scalecom(const Call &call, const CompressStep &step,
                                     const Prepared &prepared, float beta,
                                     bool average, float *out) const {
  GRADCOMM_RETURN_IF_ERROR(exchangeAndUpdate(call, step, prepared, beta, out));
  GRADCOMM_RETURN_IF_ERROR(
      allReduceSumWire(call, step.state.values.data(), step.k, step.wire));
  scatterValues(step, average, out);
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::startScalecom(const Call &call,
                                          const CompressStep &step,
                                          const Prepared &prepared, float beta,
                                          bool average, float *out,
                                          gradcomm_request_s &request) const {
  GRADCOMM_RETURN_IF_ERROR(exchangeAndUpdate(call, step, prepared, beta, out));
  std::function<void()> widen;
  GRADCOMM_RETURN_IF_ERROR(startAllReduceSumWire(
      call, step.state.values.data(), step.k, step.wire, request, &widen));
  // The state's scratch is reduced in place (or, with 16 bits, widened
  // back into) until the wait (the entry point marks the state held).
  request.finish = [widen, step, average, out] {
    if (widen)
      widen();
    scatterValues(step, average, out);
  };
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::compress(const Call &call, const CompressStep &step,
                                     const Prepared &prepared, float *values,
                                     int64_t *indices) const {
  State &state = step.state;
  bool updated = false;
  GRADCOMM_RETURN_IF_ERROR(exchangeIndices(
      call, step, prepared, /*update=*/false, 1.0f, nullptr, &updated));
  std::copy(state.indices.begin(), state.indices.end(), indices);
  cpu::gather(state.data(), step.grad, indices, step.k, values);
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::compressAndUpdate(const Call &call,
                                              const CompressStep &step,
                                              const Prepared &prepared,
                                              float beta, float *values,
                                              int64_t *indices) const {
  // The fused step's one pass over m and g, without zeroing an output.
  GRADCOMM_RETURN_IF_ERROR(
      exchangeAndUpdate(call, step, prepared, beta, /*out=*/nullptr));
  const State &state = step.state;
  std::copy(state.values.begin(), state.values.end(), values);
  std::copy(state.indices.begin(), state.indices.end(), indices);
  return GRADCOMM_OK;
}

namespace {

/// The gathered blocks of one call: n blocks of k values and k indices.
/// With a 16-bit wire the values travel narrowed (`sent`, `received`) and
/// are widened into `values` before the sum.
struct Gathered {
  std::vector<float> values;
  std::vector<int64_t> indices;
  gradcomm_wire wire = GRADCOMM_WIRE_F32;
  std::vector<uint16_t> sent, received;
};

/// Starts the all-gathers of this rank's k values (in the step's wire) and
/// indices into `gathered`.
gradcomm_status startGather(const Call &call, const CompressStep &step,
                            Gathered &gathered, Transfer transfers[2]) {
  const Context &ctx = context();
  const State &state = step.state;
  const int64_t k = step.k;
  gathered.values.resize(k * ctx.size);
  gathered.indices.resize(k * ctx.size);
  gathered.wire = step.wire;
  if (step.wire == GRADCOMM_WIRE_F32) {
    GRADCOMM_RETURN_IF_ERROR(startAllGather(
        call, state.values.data(), k, Element::Float32, gathered.values.data(),
        transfers[0], "all-gather (values)"));
  } else {
    gathered.sent.resize(k);
    gathered.received.resize(k * ctx.size);
    narrowToWire(step.wire, state.values.data(), gathered.sent.data(), k);
    GRADCOMM_RETURN_IF_ERROR(startAllGather(
        call, gathered.sent.data(), k, wireElement(step.wire),
        gathered.received.data(), transfers[0], "all-gather (values)"));
  }
  return startAllGather(call, state.indices.data(), k, Element::Int64,
                        gathered.indices.data(), transfers[1],
                        "all-gather (indices)");
}

/// The gathered blocks (widened from the wire) summed into `out`
/// (sumBlocksInRankOrder); returns the union's size.
int64_t sumGathered(Gathered &gathered, float *out, bool average) {
  if (gathered.wire != GRADCOMM_WIRE_F32)
    widenFromWire(gathered.wire, gathered.received.data(),
                  gathered.values.data(),
                  static_cast<int64_t>(gathered.indices.size()));
  return sumBlocksInRankOrder(gathered.values.data(), gathered.indices, out,
                              average, context().size);
}

/// Plain error feedback (beta = 1): m = p - c; the same pass zeroes the
/// output the gathered blocks are added into.
void feedBackError(const CompressStep &step, float *out) {
  State &state = step.state;
  cpu::gatherAndUpdate(state.data(), step.grad, step.count,
                       state.indices.data(), step.k, 1.0f, state.values.data(),
                       out);
}

} // namespace

int64_t gradcomm::sumBlocksInRankOrder(const float *values,
                                       std::vector<int64_t> &indices,
                                       float *out, bool average, int size) {
  const int64_t entries = static_cast<int64_t>(indices.size());
  for (int64_t j = 0; j < entries; ++j)
    out[indices[j]] += values[j];
  std::sort(indices.begin(), indices.end());
  const int64_t distinct =
      std::unique(indices.begin(), indices.end()) - indices.begin();
  if (average) {
    const float groupSize = static_cast<float>(size);
    for (int64_t j = 0; j < distinct; ++j)
      out[indices[j]] /= groupSize;
  }
  return distinct;
}

gradcomm_status CpuBackend::prepareLocalTopk(const Call &,
                                             const CompressStep &step,
                                             Prepared &prepared) const {
  static thread_local cpu::SelectScratch scratch;
  State &state = step.state;
  state.indices.resize(step.k);
  state.values.resize(step.k);
  uint32_t largest = cpu::selectExact(state.data(), step.grad, step.count,
                                      step.k, state.indices.data(), scratch);
  prepared.nonFinite =
      scanForNonFinite() &&
      cpu::exceedsLimit(largest, wireInputLimit(step.wire, /*summed=*/true));
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::localTopk(const Call &call,
                                      const CompressStep &step, bool average,
                                      float *out, int64_t *distinct) const {
  feedBackError(step, out);
  static thread_local Gathered gathered;
  Transfer transfers[2];
  GRADCOMM_RETURN_IF_ERROR(startGather(call, step, gathered, transfers));
  GRADCOMM_RETURN_IF_ERROR(
      waitYielding(call, transfers[0], "all-gather (values)"));
  GRADCOMM_RETURN_IF_ERROR(
      waitYielding(call, transfers[1], "all-gather (indices)"));
  *distinct = sumGathered(gathered, out, average);
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::startLocalTopk(
    const Call &call, const CompressStep &step, bool average, float *out,
    gradcomm_request_s &request, std::function<void(int64_t)> finish) const {
  feedBackError(step, out);
  // The blocks land in the request's own buffers: several calls may be in
  // flight.
  auto gathered = std::make_shared<Gathered>();
  request.transfers.resize(2);
  request.what = "all-gather (started local top-k)";
  GRADCOMM_RETURN_IF_ERROR(
      startGather(call, step, *gathered, request.transfers.data()));
  request.finish = [gathered, out, average, finish = std::move(finish)] {
    finish(sumGathered(*gathered, out, average));
  };
  return GRADCOMM_OK;
}
