//===- CpuBackend.cpp - The CPU backend: memory, dense, gossip, sparse ----===//
//
// Part of the GradComm project.
//
// Tensors are host memory; the data moves through the active group's
// transport (src/transport), started and then waited for under the
// watchdog (waitYielding), never busy-waiting: ranks may share cores.
//
//===----------------------------------------------------------------------===//

#include "CpuBackend.h"
#include "Kernels.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using namespace gradcomm;

const Backend &gradcomm::cpuBackend() {
  // Never destroyed, like the context whose states it owns memory of.
  static const CpuBackend *backend = new CpuBackend;
  return *backend;
}

/// The backend of a runtime that selected no other.
[[maybe_unused]] static const bool registered =
    (extensions().hostBackend = &cpuBackend(), true);

void gradcomm::averageOverGroup(float *values, int64_t count, bool average) {
  if (average)
    divideByGroupSize(values, count);
}

gradcomm_status CpuBackend::allocate(const Call &call, int64_t count,
                                     float **memory) const {
  *memory = nullptr;
  if (count == 0)
    return GRADCOMM_OK;
  // calloc: a large state's zero pages are mapped lazily, not written.
  *memory = static_cast<float *>(std::calloc(count, sizeof(float)));
  if (!*memory)
    return call.fail(GRADCOMM_ERR_NO_MEMORY,
                     "out of memory (" + std::to_string(count) + " floats)");
  return GRADCOMM_OK;
}

void CpuBackend::release(float *memory) const { std::free(memory); }

gradcomm_status CpuBackend::copyToHost(const Call &, void *host,
                                       const void *data, size_t bytes) const {
  if (bytes > 0)
    std::memcpy(host, data, bytes);
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::copyFromHost(const Call &, void *data,
                                         const void *host, size_t bytes) const {
  if (bytes > 0)
    std::memcpy(data, host, bytes);
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::zero(const Call &, float *data,
                                 int64_t count) const {
  std::fill(data, data + count, 0.0f);
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::exceedsLimit(const Call &, const float *input,
                                         int64_t count, float limit,
                                         bool *result) const {
  *result =
      count > 0 && cpu::exceedsLimit(cpu::maxMagnitudeKey(input, count), limit);
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::denseAllReduce(const Call &call, float *data,
                                           int64_t count, bool average) const {
  GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, data, count));
  averageOverGroup(data, count, average);
  return GRADCOMM_OK;
}

gradcomm_status
CpuBackend::startDenseAllReduce(const Call &call, float *data, int64_t count,
                                bool average,
                                gradcomm_request_s &request) const {
  GRADCOMM_RETURN_IF_ERROR(
      startAllReduceSum(call, data, count, request.transfers));
  request.finish = [data, count, average] {
    averageOverGroup(data, count, average);
  };
  return GRADCOMM_OK;
}

namespace {

/// Posts the paired exchange both ways: this replica to `peer`, the peer's
/// into `received`. Both sides post in the same order, so several
/// exchanges in flight with one peer match up in order.
gradcomm_status postExchange(const Call &call, float *x, float *received,
                             int64_t count, int peer, Transfer transfers[2]) {
  Transport &on = transport();
  GRADCOMM_RETURN_IF_ERROR(call.transport(
      on,
      on.startReceive(received, count, Element::Float32, peer, transfers[0]),
      "receive"));
  return call.transport(
      on, on.startSend(x, count, Element::Float32, peer, transfers[1]), "send");
}

/// A peer on this rank's node: the exchange is memory copies on these
/// cores, so it is pipelined in chunks of 256K floats (1 MiB), four in
/// flight, each chunk of the peer's replica mixed in while it and this
/// rank's chunk (just read by the send) are in cache; a full-size receive
/// buffer made the mix a third pass over three arrays through memory. A
/// peer across a network gets one message: there the link is the cost, and
/// per-chunk messages only add handshakes (bench/cluster measured these
/// chunks at 1.12-1.14x of MPI_Sendrecv, one message at 0.98-1.01x, 25M
/// floats, 1 Gbit/s; docs/performance.md). Both ends decide alike: whether
/// two ranks share a node is symmetric.
constexpr int64_t kGossipChunk = int64_t(1) << 18;
constexpr int64_t kGossipWindow = 4;

} // namespace

gradcomm_status CpuBackend::gossip(const Call &call, float *x, int64_t count,
                                   int peer, float mixing) const {
  const int64_t chunk = sharesNode(peer) ? kGossipChunk : count;
  const int64_t chunks = chunk > 0 ? (count + chunk - 1) / chunk : 0;
  const int64_t slot = std::min(count, chunk);
  const int64_t inFlight = std::min(chunks, kGossipWindow);
  static thread_local std::vector<float> ring;
  if (static_cast<int64_t>(ring.size()) < inFlight * slot)
    ring.resize(inFlight * slot);
  std::array<Transfer, 2 * kGossipWindow> transfers;
  auto post = [&](int64_t c) {
    const int64_t begin = c * chunk;
    return postExchange(call, x + begin, ring.data() + (c % inFlight) * slot,
                        std::min(chunk, count - begin), peer,
                        &transfers[2 * (c % inFlight)]);
  };
  // Both sides post the chunks in the same order (the count is agreed), so
  // chunk c of one matches chunk c of the other. A chunk is mixed once its
  // send is done too: the transport may still read x there until then.
  for (int64_t c = 0; c < inFlight; ++c)
    GRADCOMM_RETURN_IF_ERROR(post(c));
  for (int64_t c = 0; c < chunks; ++c) {
    Transfer *pair = &transfers[2 * (c % inFlight)];
    GRADCOMM_RETURN_IF_ERROR(waitYielding(call, pair[0], "receive", peer));
    GRADCOMM_RETURN_IF_ERROR(waitYielding(call, pair[1], "send", peer));
    const int64_t begin = c * chunk;
    cpu::mix(x + begin, ring.data() + (c % inFlight) * slot,
             std::min(chunk, count - begin), mixing);
    if (c + inFlight < chunks)
      GRADCOMM_RETURN_IF_ERROR(post(c + inFlight));
  }
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::startGossip(const Call &call, float *x,
                                        int64_t count, int peer, float mixing,
                                        gradcomm_request_s &request) const {
  // The peer's replica lands in the request's own buffer: several
  // exchanges may be in flight.
  auto received = std::make_shared<std::vector<float>>(count);
  request.transfers.resize(2);
  request.what = "receive/send (started gossip exchange)";
  request.peer = peer;
  GRADCOMM_RETURN_IF_ERROR(postExchange(call, x, received->data(), count, peer,
                                        request.transfers.data()));
  request.finish = [x, count, mixing, received] {
    cpu::mix(x, received->data(), count, mixing);
  };
  return GRADCOMM_OK;
}

namespace {

/// The reduced values into an all-zero `out` at `indices`.
void scatterIntoZeros(const float *reduced, const int64_t *indices, int64_t k,
                      float *out, int64_t count) {
  std::fill(out, out + count, 0.0f);
  cpu::scatter(out, indices, reduced, k);
}

} // namespace

gradcomm_status CpuBackend::sparseAllReduce(const Call &call,
                                            const float *values,
                                            const int64_t *indices, int64_t k,
                                            float *out, int64_t count,
                                            bool average) const {
  static thread_local std::vector<float> reduced;
  reduced.assign(values, values + k);
  GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, reduced.data(), k));
  averageOverGroup(reduced.data(), k, average);
  scatterIntoZeros(reduced.data(), indices, k, out, count);
  return GRADCOMM_OK;
}

gradcomm_status
CpuBackend::startSparseAllReduce(const Call &call, const float *values,
                                 const int64_t *indices, int64_t k, float *out,
                                 int64_t count, bool average,
                                 gradcomm_request_s &request) const {
  // Values and indices are copied into the request: the caller's buffers
  // are free at once, and several calls may be in flight.
  auto reduced = std::make_shared<std::vector<float>>(values, values + k);
  auto kept = std::make_shared<std::vector<int64_t>>(indices, indices + k);
  request.what = "all-reduce (started sparse all-reduce)";
  GRADCOMM_RETURN_IF_ERROR(
      startAllReduceSum(call, reduced->data(), k, request.transfers));
  request.finish = [reduced, kept, k, out, count, average] {
    averageOverGroup(reduced->data(), k, average);
    scatterIntoZeros(reduced->data(), kept->data(), k, out, count);
  };
  return GRADCOMM_OK;
}

gradcomm_status CpuBackend::memoryUpdate(const Call &, State &state,
                                         const float *grad, int64_t count,
                                         const int64_t *indices, int64_t k,
                                         float beta) const {
  cpu::gatherAndUpdate(state.data(), grad, count, indices, k, beta, nullptr,
                       nullptr);
  return GRADCOMM_OK;
}
