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

namespace {

/// Index j minus j * chunkSize (its offset inside chunk j; the index itself
/// when chunkSize is 0) as one Word per index, and back.
template <typename Word>
void encodeAs(const int64_t *indices, int64_t k, int64_t chunkSize,
              uint8_t *bytes) {
  for (int64_t j = 0; j < k; ++j) {
    const Word word = static_cast<Word>(indices[j] - j * chunkSize);
    std::memcpy(bytes + j * sizeof(Word), &word, sizeof(Word));
  }
}

template <typename Word>
void decodeAs(const uint8_t *bytes, int64_t k, int64_t chunkSize,
              int64_t *indices) {
  for (int64_t j = 0; j < k; ++j) {
    Word word;
    std::memcpy(&word, bytes + j * sizeof(Word), sizeof(Word));
    indices[j] = j * chunkSize + static_cast<int64_t>(word);
  }
}

} // namespace

void gradcomm::encodeIndices(const int64_t *indices, int64_t k, int width,
                             int64_t chunkSize, uint8_t *bytes) {
  switch (width) {
  case 1:
    return encodeAs<uint8_t>(indices, k, chunkSize, bytes);
  case 2:
    return encodeAs<uint16_t>(indices, k, chunkSize, bytes);
  case 4:
    return encodeAs<uint32_t>(indices, k, chunkSize, bytes);
  default:
    return encodeAs<uint64_t>(indices, k, chunkSize, bytes);
  }
}

void gradcomm::decodeIndices(const uint8_t *bytes, int64_t k, int width,
                             int64_t chunkSize, int64_t *indices) {
  switch (width) {
  case 1:
    return decodeAs<uint8_t>(bytes, k, chunkSize, indices);
  case 2:
    return decodeAs<uint16_t>(bytes, k, chunkSize, indices);
  case 4:
    return decodeAs<uint32_t>(bytes, k, chunkSize, indices);
  default:
    return decodeAs<uint64_t>(bytes, k, chunkSize, indices);
  }
}

gradcomm_status gradcomm::broadcastIndices(const Call &call, int64_t *data,
                                           int64_t count, int root, int width,
                                           int64_t chunkSize) {
  static thread_local std::vector<uint8_t> bytes;
  bytes.resize(count * width);
  if (context().rank == root)
    encodeIndices(data, count, width, chunkSize, bytes.data());
  GRADCOMM_RETURN_IF_ERROR(broadcast(call, bytes.data(), count * width,
                                     Element::Byte, root,
                                     "broadcast (indices)"));
  decodeIndices(bytes.data(), count, width, chunkSize, data);
  return GRADCOMM_OK;
}
