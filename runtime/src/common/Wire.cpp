//===- Wire.cpp - Values travelling in 16 bits ----------------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Wire.h"
#include "Backend.h"
#include "HalfFloat.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <memory>
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

float gradcomm::wireInputLimit(gradcomm_wire wire, bool summed) {
  if (wire != GRADCOMM_WIRE_F16)
    return inputLimit(summed); // bfloat16 reaches float32's largest values
  const float max = 65504.0f;
  return summed ? max / (2.0f * static_cast<float>(context().size)) : max;
}

namespace {

// MPI's user operations: inout[i] = in[i] + inout[i], added in float32 and
// rounded once, in blocks widened and narrowed by the array conversions.
// Float addition commutes bit for bit, so MPI may combine in any order and
// every rank still receives the same bits.
template <void (*Widen)(const uint16_t *, float *, int64_t),
          void (*Narrow)(const float *, uint16_t *, int64_t)>
void sumSixteenBits(void *in, void *inout, int *length, MPI_Datatype *) {
  constexpr int kBlock = 512;
  float a[kBlock], b[kBlock];
  const auto *x = static_cast<const uint16_t *>(in);
  auto *y = static_cast<uint16_t *>(inout);
  for (int first = 0; first < *length; first += kBlock) {
    const int n = std::min(kBlock, *length - first);
    Widen(x + first, a, n);
    Widen(y + first, b, n);
    for (int i = 0; i < n; ++i)
      b[i] += a[i];
    Narrow(b, y + first, n);
  }
}

/// The operation for `wire`, made once per process (MPI frees user
/// operations at MPI_Finalize).
gradcomm_status sumOperation(const Call &call, gradcomm_wire wire, MPI_Op *op) {
  static MPI_Op bfloat16 = MPI_OP_NULL, half = MPI_OP_NULL;
  MPI_Op &made = wire == GRADCOMM_WIRE_BF16 ? bfloat16 : half;
  if (made == MPI_OP_NULL)
    GRADCOMM_RETURN_IF_ERROR(call.mpi(
        MPI_Op_create(wire == GRADCOMM_WIRE_BF16
                          ? sumSixteenBits<widenBfloat16, narrowBfloat16>
                          : sumSixteenBits<widenHalf, narrowHalf>,
                      /*commute=*/1, &made),
        "MPI_Op_create"));
  *op = made;
  return GRADCOMM_OK;
}

/// Narrows `data` into `packed` and starts its all-reduce, appending the
/// requests.
gradcomm_status postSixteenBits(const Call &call, const float *data,
                                int64_t count, gradcomm_wire wire,
                                std::vector<uint16_t> &packed,
                                std::vector<MPI_Request> &requests) {
  MPI_Op op = MPI_OP_NULL;
  GRADCOMM_RETURN_IF_ERROR(sumOperation(call, wire, &op));
  packed.resize(static_cast<size_t>(count));
  if (wire == GRADCOMM_WIRE_BF16)
    narrowBfloat16(data, packed.data(), count);
  else
    narrowHalf(data, packed.data(), count);
  for (int64_t offset = 0; offset < count; offset += INT_MAX) {
    int chunk = static_cast<int>(std::min<int64_t>(count - offset, INT_MAX));
    MPI_Request request;
    GRADCOMM_RETURN_IF_ERROR(
        call.mpi(MPI_Iallreduce(MPI_IN_PLACE, packed.data() + offset, chunk,
                                MPI_UINT16_T, op, context().comm, &request),
                 "MPI_Iallreduce"));
    requests.push_back(request);
  }
  return GRADCOMM_OK;
}

void widenInto(float *data, const std::vector<uint16_t> &packed,
               gradcomm_wire wire) {
  const auto count = static_cast<int64_t>(packed.size());
  if (wire == GRADCOMM_WIRE_BF16)
    widenBfloat16(packed.data(), data, count);
  else
    widenHalf(packed.data(), data, count);
}

} // namespace

gradcomm_status gradcomm::allReduceSumWire(const Call &call, float *data,
                                           int64_t count, gradcomm_wire wire) {
  if (wire == GRADCOMM_WIRE_F32)
    return allReduceSum(call, data, count);
  std::vector<uint16_t> packed;
  std::vector<MPI_Request> requests;
  GRADCOMM_RETURN_IF_ERROR(
      postSixteenBits(call, data, count, wire, packed, requests));
  for (MPI_Request &request : requests)
    GRADCOMM_RETURN_IF_ERROR(
        waitYielding(call, request, "MPI_Iallreduce (16-bit values)"));
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
    return startAllReduceSum(call, data, count, request.requests);
  auto packed = std::make_shared<std::vector<uint16_t>>();
  GRADCOMM_RETURN_IF_ERROR(
      postSixteenBits(call, data, count, wire, *packed, request.requests));
  // MPI reduces into `packed` until the wait: the request keeps it.
  alsoRelease(request, [packed] {});
  *widen = [packed, data, wire] { widenInto(data, *packed, wire); };
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::denseAllReduceWire(const Call &call, float *data,
                                             int64_t count, bool average,
                                             gradcomm_wire wire) {
  if (wire == GRADCOMM_WIRE_F32)
    return backend().denseAllReduce(call, data, count, average);
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
