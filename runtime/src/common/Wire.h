//===- Wire.h - Values travelling in 16 bits --------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Tensors stay float32 in memory; a 16-bit wire (runtime.h's gradcomm_wire)
// rounds each value to bfloat16 or binary16 (to nearest, ties to even)
// just before the transport sends it and widens it back after. The sum is
// the transport's over the 16-bit type (Element::Bfloat16, Float16), which
// adds two values in float32 and rounds once.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_WIRE_H
#define GRADCOMM_RUNTIME_WIRE_H

#include "Internal.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace gradcomm {

/// 4 or 2.
size_t wireValueBytes(gradcomm_wire wire);

/// A 16-bit wire's transport element (Bfloat16 or Float16).
Element wireElement(gradcomm_wire wire);

/// float32 -> the 16-bit wire's bits (round to nearest even), and back.
void narrowToWire(gradcomm_wire wire, const float *in, uint16_t *out,
                  int64_t count);
void widenFromWire(gradcomm_wire wire, const uint16_t *in, float *out,
                   int64_t count);

/// GRADCOMM_ERR_INVALID_ARGUMENT unless `wire` is a gradcomm_wire.
gradcomm_status requireWire(const Call &call, gradcomm_wire wire);

/// requireWire, and for a 16-bit wire host tensors or a backend that
/// narrows on its device (Backend::narrowsOnDevice): what the dense
/// all-reduce and the ScaleCom recipe accept.
gradcomm_status requireWireOnHostOrDevice(const Call &call, gradcomm_wire wire);

/// inputLimit(summed) within what the wire type can carry: for binary16,
/// 65504 / (2 n) when summed (the n-rank sum cannot overflow), else 65504.
float wireInputLimit(gradcomm_wire wire, bool summed);

/// allReduceSum (host memory) with the values travelling as `wire`; `data`
/// receives the widened sum.
gradcomm_status allReduceSumWire(const Call &call, float *data, int64_t count,
                                 gradcomm_wire wire);

/// allReduceSumWire started: the values are narrowed now into a buffer the
/// request keeps, the all-reduce appended to request.transfers; `*widen`
/// writes the sum back into `data` once they completed (empty for
/// float32, which reduces `data` in place): run it first in the request's
/// finish.
gradcomm_status startAllReduceSumWire(const Call &call, float *data,
                                      int64_t count, gradcomm_wire wire,
                                      gradcomm_request_s &request,
                                      std::function<void()> *widen);

/// The reduce-scatter (sum) of host `send` (block r: counts[r] values, in
/// rank order) into this rank's `receive`, the values travelling as `wire`,
/// appended to request.transfers. A 16-bit wire narrows `send` now into a
/// buffer the request keeps; `*widen` then writes the sums into `receive`
/// once the transfer completed (empty for float32, which receives in
/// place): run it first in the request's finish.
gradcomm_status startReduceScatterWire(const Call &call, const float *send,
                                       float *receive,
                                       const std::vector<int64_t> &counts,
                                       gradcomm_wire wire,
                                       gradcomm_request_s &request,
                                       std::function<void()> *widen);

/// The selected backend's dense all-reduce (the mean with `average`) of
/// `data`, its values travelling as `wire`; a 16-bit wire needs host memory
/// or a backend that narrows on its device (the entry points validate it). The
/// started form leaves the sum (and the mean) to the request's finish, after
/// what it already holds.
gradcomm_status denseAllReduceWire(const Call &call, float *data, int64_t count,
                                   bool average, gradcomm_wire wire);
gradcomm_status startDenseAllReduceWire(const Call &call, float *data,
                                        int64_t count, bool average,
                                        gradcomm_wire wire,
                                        gradcomm_request_s &request);

/// A gossip exchange of replica `x` with `peer`, x travelling as a 16-bit
/// `wire` both ways, then x = (1 - mixing) x + mixing x_peer in float32
/// (host memory, or the device's of a backend that narrows there). The started
/// form posts the exchange into `request` (which keeps both 16-bit copies) and
/// mixes at its finish.
gradcomm_status gossipWire(const Call &call, float *x, int64_t count, int peer,
                           float mixing, gradcomm_wire wire);
gradcomm_status startGossipWire(const Call &call, float *x, int64_t count,
                                int peer, float mixing, gradcomm_wire wire,
                                gradcomm_request_s &request);

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_WIRE_H
