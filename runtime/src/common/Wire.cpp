//===- Wire.cpp - Values travelling in 16 bits ----------------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Wire.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

using namespace gradcomm;

uint16_t gradcomm::toBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN stays a (quiet) NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u); // to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

float gradcomm::fromBfloat16(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

// The compiler's _Float16 conversions (libgcc's, to nearest even,
// subnormals and overflow to infinity included) rather than bit tricks.
uint16_t gradcomm::toHalf(float value) {
  _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof(bits));
  return bits;
}

float gradcomm::fromHalf(uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, sizeof(half));
  return static_cast<float>(half);
}

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
// rounded once. Float addition commutes bit for bit, so MPI may combine
// in any order and every rank still receives the same bits.
void sumBfloat16(void *in, void *inout, int *length, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = toBfloat16(fromBfloat16(a[i]) + fromBfloat16(b[i]));
}

void sumHalf(void *in, void *inout, int *length, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = toHalf(fromHalf(a[i]) + fromHalf(b[i]));
}

/// The operation for `wire`, made once per process (MPI frees user
/// operations at MPI_Finalize).
gradcomm_status sumOperation(const Call &call, gradcomm_wire wire, MPI_Op *op) {
  static MPI_Op bfloat16 = MPI_OP_NULL, half = MPI_OP_NULL;
  MPI_Op &made = wire == GRADCOMM_WIRE_BF16 ? bfloat16 : half;
  if (made == MPI_OP_NULL)
    GRADCOMM_RETURN_IF_ERROR(call.mpi(
        MPI_Op_create(wire == GRADCOMM_WIRE_BF16 ? sumBfloat16 : sumHalf,
                      /*commute=*/1, &made),
        "MPI_Op_create"));
  *op = made;
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm::allReduceSumWire(const Call &call, float *data,
                                           int64_t count, gradcomm_wire wire) {
  if (wire == GRADCOMM_WIRE_F32)
    return allReduceSum(call, data, count);
  MPI_Op op = MPI_OP_NULL;
  GRADCOMM_RETURN_IF_ERROR(sumOperation(call, wire, &op));
  auto narrow = wire == GRADCOMM_WIRE_BF16 ? toBfloat16 : toHalf;
  auto widen = wire == GRADCOMM_WIRE_BF16 ? fromBfloat16 : fromHalf;
  std::vector<uint16_t> packed(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    packed[i] = narrow(data[i]);
  for (int64_t offset = 0; offset < count; offset += INT_MAX) {
    int chunk = static_cast<int>(std::min<int64_t>(count - offset, INT_MAX));
    MPI_Request request;
    GRADCOMM_RETURN_IF_ERROR(
        call.mpi(MPI_Iallreduce(MPI_IN_PLACE, packed.data() + offset, chunk,
                                MPI_UINT16_T, op, context().comm, &request),
                 "MPI_Iallreduce"));
    GRADCOMM_RETURN_IF_ERROR(
        waitYielding(call, request, "MPI_Iallreduce (16-bit values)"));
  }
  for (int64_t i = 0; i < count; ++i)
    data[i] = widen(packed[i]);
  return GRADCOMM_OK;
}
