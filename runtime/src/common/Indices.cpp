//===- Indices.cpp - ScaleCom indices as they travel ----------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sched.h>
#include <time.h>
#include <vector>

using namespace gradcomm;

int gradcomm::indexBytes(int64_t bound) {
  return bound <= int64_t(INT32_MAX) + 1 ? 4 : 8;
}

int gradcomm::chunkIndexBytes(int64_t bound, int64_t chunkSize) {
  return chunkSize <= 256 ? 1 : chunkSize <= 65536 ? 2 : indexBytes(bound);
}

gradcomm_status gradcomm::broadcastIndices(const Call &call, int64_t *data,
                                           int root,
                                           const IndexCoding &coding) {
  static thread_local std::vector<uint8_t> bytes;
  bytes.resize(coding.bytes());
  if (context().rank == root)
    encodeIndices(coding, data, bytes.data());
  GRADCOMM_RETURN_IF_ERROR(broadcast(call, bytes.data(), coding.bytes(),
                                     Element::Byte, root,
                                     "broadcast (indices)"));
  decodeIndices(coding, bytes.data(), data);
  return GRADCOMM_OK;
}
