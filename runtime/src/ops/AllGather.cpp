//===- AllGather.cpp - The parameter all-gather of sharded training -------===//
//
// Part of the GradComm project.
//
// Sharded data parallelism (ZeRO-3, FSDP) keeps each parameter cut into
// shards and all-gathers the whole parameter before it is used. The values
// are parameters, not summed gradients, so the all-gather goes through the
// agreement (matching calls, counts) without the non-finite scan, and
// stays dense (docs/scalecom.md, "Sharded training"). Host memory over the
// transport's all-gather of equal blocks: the group size must divide the
// count. A 16-bit wire gathers each value rounded to that type: exact for
// parameters that already are bfloat16 (binary16), half the bytes.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Shards.h"
#include "Wire.h"

#include <vector>

using namespace gradcomm;

namespace {

gradcomm_status allGatherWire(const Call &call, const char *opName,
                              const float *shard, float *data, int64_t count,
                              gradcomm_wire wire) {
  const double start = now();
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  const int size = context().size;
  // This rank's block of `data`, where an in-place shard sits.
  const float *own = data + shardBegin(count, context().rank, size);
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "op_name", opName));
    GRADCOMM_RETURN_IF_ERROR(
        requireRange(call, "count", count, 1, int64_t(1) << 62));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "shard", shard));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "data", data));
    GRADCOMM_RETURN_IF_ERROR(
        requireHostTensors(call, "the parameter all-gather"));
    GRADCOMM_RETURN_IF_ERROR(requireWire(call, wire));
    if (count % size != 0)
      return call.fail(
          GRADCOMM_ERR_INVALID_ARGUMENT,
          "the all-gather takes equal shards: " + std::to_string(size) +
              " ranks do not divide " + std::to_string(count) + " elements");
    if (count / size > kTransportMaxCount)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "a shard of " + std::to_string(count / size) +
                           " elements exceeds one transfer");
    if (shard < data + count && data < shard + count / size && shard != own)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "'shard' overlaps 'data' other than at this rank's "
                       "range");
    return GRADCOMM_OK;
  }));
  GRADCOMM_RETURN_IF_ERROR(checkConsistency(
      call, {{"count", count}, {"wire", wire}}, /*localNonFinite=*/false));
  const int64_t length = count / size;
  if (wire != GRADCOMM_WIRE_F32) {
    std::vector<uint16_t> sent(length), received(count);
    narrowToWire(wire, shard, sent.data(), length);
    GRADCOMM_RETURN_IF_ERROR(allGather(call, sent.data(), length,
                                       wireElement(wire), received.data(),
                                       "all-gather (16-bit values)"));
    widenFromWire(wire, received.data(), data, count);
  } else {
    // In place (the shard is this rank's range of `data`): the transport
    // may not send from what it receives into.
    std::vector<float> copy;
    const float *send = shard;
    if (shard == own) {
      copy.assign(shard, shard + length);
      send = copy.data();
    }
    GRADCOMM_RETURN_IF_ERROR(
        allGather(call, send, length, Element::Float32, data, "all-gather"));
  }
  gradcomm_op_stats &stats = opStats(opName);
  // An all-gather moves what the reduce-scatter it undoes moves.
  const uint64_t bytes = reduceScatterBytes(wireValueBytes(wire) * count, size);
  stats.calls += 1;
  stats.messages += 1;
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
  stats.seconds += now() - start;
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_all_gather_f32(const char *opName, const float *shard,
                                        float *data, int64_t count) {
  return guarded("all_gather_f32", opName, [&](const Call &call) {
    return allGatherWire(call, opName, shard, data, count, GRADCOMM_WIRE_F32);
  });
}

gradcomm_status gradcomm_all_gather_wire_f32(const char *opName,
                                             const float *shard, float *data,
                                             int64_t count,
                                             gradcomm_wire wire) {
  return guarded("all_gather_wire_f32", opName, [&](const Call &call) {
    return allGatherWire(call, opName, shard, data, count, wire);
  });
}
