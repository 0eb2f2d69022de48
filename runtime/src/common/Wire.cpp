//===- Wire.cpp - Values travelling in 16 bits ----------------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Wire.h"
#include "Backend.h"
#include "HalfFloat.h"
#include "Kernels.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

using namespace gradcomm;
using namespace gradcomm::half;

size_t gradcomm::wireValueBytes(gradcomm_wire wire) {
  return wire == GRADCOMM_WIRE_F32 ? sizeof(float) : sizeof(uint16_t);
}

gradcomm_status gradcomm::requireWire(const Call &call, gradcomm_wire wire) {
  if (wire != GRADCOMM_WIRE_F32 && wire != GRADCOMM_WIRE_BF16 &&
      wire != GRADCOMM_WIRE_F16)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "unknown wire type " +
                         std::to_string(static_cast<int>(wire)));
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::requireWireOnHostOrDevice(const Call &call,
                                                    gradcomm_wire wire) {
  GRADCOMM_RETURN_IF_ERROR(requireWire(call, wire));
  if (wire == GRADCOMM_WIRE_F32 || backend().narrowsOnDevice())
    return GRADCOMM_OK;
  return requireHostTensors(call, "a 16-bit wire");
}

float gradcomm::wireInputLimit(gradcomm_wire wire, bool summed) {
  if (wire != GRADCOMM_WIRE_F16)
    return inputLimit(summed); // bfloat16 reaches float32's largest values
  const float max = 65504.0f;
  return summed ? max / (2.0f * static_cast<float>(context().size)) : max;
}

Element gradcomm::wireElement(gradcomm_wire wire) {
  return wire == GRADCOMM_WIRE_BF16 ? Element::Bfloat16 : Element::Float16;
}

void gradcomm::narrowToWire(gradcomm_wire wire, const float *in, uint16_t *out,
                            int64_t count) {
  if (wire == GRADCOMM_WIRE_BF16)
    narrowBfloat16(in, out, count);
  else
    narrowHalf(in, out, count);
}

void gradcomm::widenFromWire(gradcomm_wire wire, const uint16_t *in, float *out,
                             int64_t count) {
  if (wire == GRADCOMM_WIRE_BF16)
    widenBfloat16(in, out, count);
  else
    widenHalf(in, out, count);
}

namespace {

/// Narrows `data` into `packed` and starts its all-reduce (a sum in
/// float32 over the 16-bit type: Transport.h), appending the transfers.
gradcomm_status postSixteenBits(const Call &call, const float *data,
                                int64_t count, gradcomm_wire wire,
                                std::vector<uint16_t> &packed,
                                std::vector<Transfer> &transfers) {
  packed.resize(static_cast<size_t>(count));
  narrowToWire(wire, data, packed.data(), count);
  return startAllReduce(call, packed.data(), count, wireElement(wire),
                        Reduction::Sum, transfers,
                        "all-reduce (16-bit values)");
}

void widenInto(float *data, const std::vector<uint16_t> &packed,
               gradcomm_wire wire) {
  widenFromWire(wire, packed.data(), data, static_cast<int64_t>(packed.size()));
}

} // namespace

gradcomm_status gradcomm::allReduceSumWire(const Call &call, float *data,
                                           int64_t count, gradcomm_wire wire) {
  if (wire == GRADCOMM_WIRE_F32)
    return allReduceSum(call, data, count);
  std::vector<uint16_t> packed;
  std::vector<Transfer> transfers;
  GRADCOMM_RETURN_IF_ERROR(
      postSixteenBits(call, data, count, wire, packed, transfers));
  for (Transfer &transfer : transfers)
    GRADCOMM_RETURN_IF_ERROR(
        waitYielding(call, transfer, "all-reduce (16-bit values)"));
  widenInto(data, packed, wire);
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::startAllReduceSumWire(const Call &call, float *data,
                                                int64_t count,
                                                gradcomm_wire wire,
                                                gradcomm_request_s &request,
                                                std::function<void()> *widen) {
  *widen = nullptr;
  if (wire == GRADCOMM_WIRE_F32)
    return startAllReduceSum(call, data, count, request.transfers);
  auto packed = std::make_shared<std::vector<uint16_t>>();
  GRADCOMM_RETURN_IF_ERROR(
      postSixteenBits(call, data, count, wire, *packed, request.transfers));
  // The transport reduces into `packed` until the wait: the request keeps
  // it.
  alsoRelease(request, [packed] {});
  *widen = [packed, data, wire] { widenInto(data, *packed, wire); };
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::startReduceScatterWire(
    const Call &call, const float *send, float *receive,
    const std::vector<int64_t> &counts, gradcomm_wire wire,
    gradcomm_request_s &request, std::function<void()> *widen) {
  *widen = nullptr;
  request.transfers.emplace_back();
  Transfer &transfer = request.transfers.back();
  if (wire == GRADCOMM_WIRE_F32)
    return startReduceScatter(call, send, receive, counts, Element::Float32,
                              Reduction::Sum, transfer, request.what);
  struct Packets {
    std::vector<uint16_t> sent, received;
  };
  auto packets = std::make_shared<Packets>();
  packets->sent.resize(
      std::accumulate(counts.begin(), counts.end(), static_cast<size_t>(0)));
  packets->received.resize(counts[context().rank]);
  narrowToWire(wire, send, packets->sent.data(),
               static_cast<int64_t>(packets->sent.size()));
  // The transport reads and writes both until the wait: the request keeps
  // them.
  alsoRelease(request, [packets] {});
  GRADCOMM_RETURN_IF_ERROR(startReduceScatter(
      call, packets->sent.data(), packets->received.data(), counts,
      wireElement(wire), Reduction::Sum, transfer, request.what));
  *widen = [packets, receive, wire] {
    widenFromWire(wire, packets->received.data(), receive,
                  static_cast<int64_t>(packets->received.size()));
  };
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::denseAllReduceWire(const Call &call, float *data,
                                             int64_t count, bool average,
                                             gradcomm_wire wire) {
  if (wire == GRADCOMM_WIRE_F32)
    return backend().denseAllReduce(call, data, count, average);
  if (backend().narrowsOnDevice())
    return backend().deviceDenseAllReduceWire(call, data, count, average, wire);
  GRADCOMM_RETURN_IF_ERROR(allReduceSumWire(call, data, count, wire));
  if (average)
    divideByGroupSize(data, count);
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::startDenseAllReduceWire(const Call &call, float *data,
                                                  int64_t count, bool average,
                                                  gradcomm_wire wire,
                                                  gradcomm_request_s &request) {
  if (wire == GRADCOMM_WIRE_F32)
    return backend().startDenseAllReduce(call, data, count, average, request);
  if (backend().narrowsOnDevice())
    return backend().startDeviceDenseAllReduceWire(call, data, count, average,
                                                   wire, request);
  std::function<void()> widen;
  GRADCOMM_RETURN_IF_ERROR(
      startAllReduceSumWire(call, data, count, wire, request, &widen));
  alsoFinish(request, [widen, data, count, average] {
    widen();
    if (average)
      divideByGroupSize(data, count);
  });
  return GRADCOMM_OK;
}

namespace {

/// This rank's replica narrowed, and room for the peer's: what a 16-bit
/// gossip exchange sends and receives.
struct GossipPackets {
  std::vector<uint16_t> mine, theirs;
};

/// Narrows x into packets.mine and posts its exchange with `peer`
/// (receive first, as the float32 exchange does).
gradcomm_status postGossipWire(const Call &call, const float *x, int64_t count,
                               int peer, gradcomm_wire wire,
                               GossipPackets &packets, Transfer transfers[2]) {
  packets.mine.resize(static_cast<size_t>(count));
  packets.theirs.resize(static_cast<size_t>(count));
  narrowToWire(wire, x, packets.mine.data(), count);
  Transport &on = transport();
  GRADCOMM_RETURN_IF_ERROR(
      call.transport(on,
                     on.startReceive(packets.theirs.data(), count,
                                     wireElement(wire), peer, transfers[0]),
                     "receive"));
  return call.transport(on,
                        on.startSend(packets.mine.data(), count,
                                     wireElement(wire), peer, transfers[1]),
                        "send");
}

/// x mixed with the peer's widened copy.
void mixWire(float *x, const GossipPackets &packets, int64_t count,
             float mixing, gradcomm_wire wire) {
  static thread_local std::vector<float> peer;
  peer.resize(static_cast<size_t>(count));
  widenFromWire(wire, packets.theirs.data(), peer.data(), count);
  cpu::mix(x, peer.data(), count, mixing);
}

} // namespace

gradcomm_status gradcomm::gossipWire(const Call &call, float *x, int64_t count,
                                     int peer, float mixing,
                                     gradcomm_wire wire) {
  if (backend().narrowsOnDevice())
    return backend().deviceGossipWire(call, x, count, peer, mixing, wire);
  static thread_local GossipPackets packets;
  Transfer transfers[2];
  GRADCOMM_RETURN_IF_ERROR(
      postGossipWire(call, x, count, peer, wire, packets, transfers));
  GRADCOMM_RETURN_IF_ERROR(
      waitYielding(call, transfers[0], "receive (16-bit values)", peer));
  GRADCOMM_RETURN_IF_ERROR(
      waitYielding(call, transfers[1], "send (16-bit values)", peer));
  mixWire(x, packets, count, mixing, wire);
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::startGossipWire(const Call &call, float *x,
                                          int64_t count, int peer, float mixing,
                                          gradcomm_wire wire,
                                          gradcomm_request_s &request) {
  if (backend().narrowsOnDevice())
    return backend().startDeviceGossipWire(call, x, count, peer, mixing, wire,
                                           request);
  // Several exchanges may be in flight: each request keeps its packets.
  auto packets = std::make_shared<GossipPackets>();
  request.transfers.resize(2);
  request.what = "receive/send (started 16-bit gossip exchange)";
  request.peer = peer;
  GRADCOMM_RETURN_IF_ERROR(postGossipWire(call, x, count, peer, wire, *packets,
                                          request.transfers.data()));
  request.finish = [x, count, mixing, wire, packets] {
    mixWire(x, *packets, count, mixing, wire);
  };
  return GRADCOMM_OK;
}
