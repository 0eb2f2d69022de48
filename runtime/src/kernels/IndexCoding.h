//===- IndexCoding.h - How ScaleCom indices travel --------------*- C++ -*-===//
//
// Part of the GradComm project.
//
// A leader's k selected indices as bytes on the wire, and back. Pure
// functions on host arrays (no MPI, no state), unit-tested alone
// (KernelsTest.cpp). docs/runtime.md, "Index coding".
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_KERNELS_INDEXCODING_H
#define GRADCOMM_RUNTIME_KERNELS_INDEXCODING_H

#include <cstdint>

namespace gradcomm {

/// How a ScaleCom leader's k indices travel. Every rank computes the same
/// coding from (count, k, selection, chunk size), which the agreement
/// checks, so the message needs no header and has a size known up front.
struct IndexCoding {
  int64_t k = 0;
  /// Fixed width: `width` bytes (1, 2, 4 or 8) of index j minus
  /// j * chunkSize (the offset inside chunk j; the index itself with
  /// chunkSize 0).
  int width = 4;
  int64_t chunkSize = 0;
  /// Gaps (exact selection, ascending indices): each index minus the one
  /// before it minus one, in a 16-bit word; a gap of 0xFFFF or more is the
  /// word 0xFFFF and then the gap in two words, low first. The gaps sum to
  /// at most count - k, so `escapes` = (count - k) / 65535 bounds them, and
  /// the message is k + 2 * escapes words whatever was selected (unused
  /// words are zero).
  bool gaps = false;
  int64_t escapes = 0;

  int64_t bytes() const { return gaps ? 2 * (k + 2 * escapes) : k * width; }
};

/// Fixed width for every index (the CUDA backend's coding).
IndexCoding fixedIndexCoding(int64_t k, int width, int64_t chunkSize);
/// The smaller of gaps and fixed width for an exact selection's ascending
/// indices (the CPU backend's coding); chunk selection keeps its offsets.
IndexCoding smallestIndexCoding(int64_t count, int64_t k, int width,
                                int64_t chunkSize);
/// encodeIndices writes coding.bytes() bytes; decodeIndices reads them
/// back. With gaps the indices must ascend strictly.
void encodeIndices(const IndexCoding &coding, const int64_t *indices,
                   uint8_t *bytes);
void decodeIndices(const IndexCoding &coding, const uint8_t *bytes,
                   int64_t *indices);

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_KERNELS_INDEXCODING_H
