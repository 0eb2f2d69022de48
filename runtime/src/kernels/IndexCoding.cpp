//===- IndexCoding.cpp - How ScaleCom indices travel ----------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "IndexCoding.h"

#include <climits>
#include <cstring>

using namespace gradcomm;

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

/// Gap coding (IndexCoding::gaps): 16-bit words, an escape word before a
/// gap that does not fit in one. Words go through memcpy: `bytes` is a byte
/// buffer (an agreement payload, a broadcast scratch) with no alignment.
constexpr uint16_t kEscape = 0xFFFF;

void putWord(uint8_t *bytes, int64_t w, uint16_t word) {
  std::memcpy(bytes + 2 * w, &word, 2);
}

uint16_t getWord(const uint8_t *bytes, int64_t w) {
  uint16_t word;
  std::memcpy(&word, bytes + 2 * w, 2);
  return word;
}

void encodeGaps(const int64_t *indices, const IndexCoding &coding,
                uint8_t *bytes) {
  int64_t w = 0;
  int64_t previous = -1;
  for (int64_t j = 0; j < coding.k; ++j) {
    const uint64_t gap = static_cast<uint64_t>(indices[j] - previous - 1);
    previous = indices[j];
    if (gap < kEscape) {
      putWord(bytes, w++, static_cast<uint16_t>(gap));
      continue;
    }
    putWord(bytes, w++, kEscape);
    putWord(bytes, w++, static_cast<uint16_t>(gap & 0xFFFF));
    putWord(bytes, w++, static_cast<uint16_t>(gap >> 16));
  }
  std::memset(bytes + 2 * w, 0, coding.bytes() - 2 * w);
}

void decodeGaps(const uint8_t *bytes, const IndexCoding &coding,
                int64_t *indices) {
  int64_t w = 0;
  int64_t previous = -1;
  for (int64_t j = 0; j < coding.k; ++j) {
    uint64_t gap = getWord(bytes, w++);
    if (gap == kEscape) {
      gap = uint64_t(getWord(bytes, w)) | uint64_t(getWord(bytes, w + 1)) << 16;
      w += 2;
    }
    previous += static_cast<int64_t>(gap) + 1;
    indices[j] = previous;
  }
}

} // namespace

IndexCoding gradcomm::fixedIndexCoding(int64_t k, int width,
                                       int64_t chunkSize) {
  IndexCoding coding;
  coding.k = k;
  coding.width = width;
  coding.chunkSize = chunkSize;
  return coding;
}

IndexCoding gradcomm::smallestIndexCoding(int64_t count, int64_t k, int width,
                                          int64_t chunkSize) {
  IndexCoding fixed = fixedIndexCoding(k, width, chunkSize);
  // An escaped gap carries 32 bits: enough below 2^31 elements.
  if (chunkSize != 0 || count > int64_t(INT32_MAX) + 1)
    return fixed;
  IndexCoding gaps = fixed;
  gaps.gaps = true;
  gaps.escapes = (count - k) / kEscape;
  return gaps.bytes() < fixed.bytes() ? gaps : fixed;
}

void gradcomm::encodeIndices(const IndexCoding &coding, const int64_t *indices,
                             uint8_t *bytes) {
  if (coding.gaps)
    return encodeGaps(indices, coding, bytes);
  switch (coding.width) {
  case 1:
    return encodeAs<uint8_t>(indices, coding.k, coding.chunkSize, bytes);
  case 2:
    return encodeAs<uint16_t>(indices, coding.k, coding.chunkSize, bytes);
  case 4:
    return encodeAs<uint32_t>(indices, coding.k, coding.chunkSize, bytes);
  default:
    return encodeAs<uint64_t>(indices, coding.k, coding.chunkSize, bytes);
  }
}

void gradcomm::decodeIndices(const IndexCoding &coding, const uint8_t *bytes,
                             int64_t *indices) {
  if (coding.gaps)
    return decodeGaps(bytes, coding, indices);
  switch (coding.width) {
  case 1:
    return decodeAs<uint8_t>(bytes, coding.k, coding.chunkSize, indices);
  case 2:
    return decodeAs<uint16_t>(bytes, coding.k, coding.chunkSize, indices);
  case 4:
    return decodeAs<uint32_t>(bytes, coding.k, coding.chunkSize, indices);
  default:
    return decodeAs<uint64_t>(bytes, coding.k, coding.chunkSize, indices);
  }
}
