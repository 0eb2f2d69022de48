//===- HalfFloat.h - float32 to and from bfloat16 and binary16 --*- C++ -*-===//
//
// Part of the GradComm project.
//
// The 16-bit wire's conversions (Wire.cpp), on their own so the CPU
// benchmark measures the code the runtime ships. Round to nearest, ties to
// even, both ways exact where the value fits; NaN stays NaN. Array forms
// run at memory bandwidth: the bfloat16 loops are branch-free (the
// compiler vectorizes them), the binary16 ones use the F16C instructions
// where the CPU has them (x86-64), else the compiler's _Float16
// conversions (libgcc's, the same bits, slower).
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_HALFFLOAT_H
#define GRADCOMM_RUNTIME_HALFFLOAT_H

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gradcomm::half {

/// Widened outputs of this many bytes or more bypass the caches.
inline constexpr int64_t kStreamingBytes = int64_t(16) << 20;

inline uint16_t toBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quietNan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNan
                                                                  : rounded);
}

inline float fromBfloat16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

inline uint16_t toHalf(float value) {
  const _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof(bits));
  return bits;
}

inline float fromHalf(uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, sizeof(half));
  return static_cast<float>(half);
}

#if defined(__x86_64__)
/// toBfloat16 on 8 floats (their bits), as 32-bit lanes.
__attribute__((target("avx2"))) inline __m256i toBfloat16Lanes(__m256i bits) {
  const __m256i high = _mm256_srli_epi32(bits, 16);
  const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), lsb),
      16);
  const __m256i quietNan = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  // One unordered compare finds the NaNs (no sign mask and integer compare).
  const __m256 value = _mm256_castsi256_ps(bits);
  const __m256i isNan =
      _mm256_castps_si256(_mm256_cmp_ps(value, value, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, quietNan, isNan);
}

/// toBfloat16 16 at a time (integer operations: the same bits).
__attribute__((target("avx2"))) inline void
narrowBfloat16Avx2(const float *in, uint16_t *out, int64_t n) {
  int64_t i = 0;
  // Streaming stores at DRAM sizes: 0.73x of a copy without, 0.77-0.90x
  // with (docs/performance.md).
  const bool streaming = n * int64_t(sizeof(uint16_t)) >= kStreamingBytes;
  if (streaming)
    for (; i < n && reinterpret_cast<uintptr_t>(out + i) % 32 != 0; ++i)
      out[i] = toBfloat16(in[i]);
  for (; i + 16 <= n; i += 16) {
    // 2 KiB ahead: the longer loop body keeps fewer loads in flight than a
    // copy's, and DRAM bandwidth drops with them (0.62x of a copy without,
    // 0.70x with; docs/performance.md). Prefetching past the end is safe.
    _mm_prefetch(reinterpret_cast<const char *>(in + i + 512), _MM_HINT_T0);
    const __m256i a = toBfloat16Lanes(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + i)));
    const __m256i b = toBfloat16Lanes(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + i + 8)));
    // Lanes hold values <= 0xffff: packing saturates nothing. packus works
    // per 128-bit half; the permute puts the four quarters back in order.
    const __m256i packed =
        _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    if (streaming)
      _mm256_stream_si256(reinterpret_cast<__m256i *>(out + i), packed);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), packed);
  }
  if (streaming)
    _mm_sfence();
  for (; i < n; ++i)
    out[i] = toBfloat16(in[i]);
}
#endif

inline void narrowBfloat16(const float *in, uint16_t *out, int64_t n) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2)
    return narrowBfloat16Avx2(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i)
    out[i] = toBfloat16(in[i]);
}

#if defined(__x86_64__)
/// fromBfloat16 with streaming stores, for outputs of kStreamingBytes or
/// more (see widenHalfF16c).
__attribute__((target("avx2"))) inline void
streamWidenBfloat16(const uint16_t *in, float *out, int64_t n) {
  int64_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(out + i) % 32 != 0; ++i)
    out[i] = fromBfloat16(in[i]);
  for (; i + 8 <= n; i += 8) {
    const __m256i wide = _mm256_cvtepu16_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i)));
    _mm256_stream_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
  }
  _mm_sfence();
  for (; i < n; ++i)
    out[i] = fromBfloat16(in[i]);
}
#endif

inline void widenBfloat16(const uint16_t *in, float *out, int64_t n) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && n * int64_t(sizeof(float)) >= kStreamingBytes)
    return streamWidenBfloat16(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i)
    out[i] = fromBfloat16(in[i]);
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) inline void
narrowHalfF16c(const float *in, uint16_t *out, int64_t n) {
  // Streaming stores did not pay here (0.65-0.72x of a copy against 0.77x):
  // the output is a third of the traffic.
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(out + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    out[i] = toHalf(in[i]);
}

__attribute__((target("avx,f16c"))) inline __m256
widenEightHalves(const uint16_t *in) {
  return _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(in)));
}

__attribute__((target("avx,f16c"))) inline void
widenHalfF16c(const uint16_t *in, float *out, int64_t n) {
  int64_t i = 0;
  // Twice the bytes go out as come in: at DRAM sizes ordinary stores read
  // each output line before writing it, 10 bytes of traffic per element
  // for 6 counted. Streaming stores skip that read. Below the threshold
  // the output is likely read again soon, from the cache.
  if (n * int64_t(sizeof(float)) >= kStreamingBytes) {
    for (; i < n && reinterpret_cast<uintptr_t>(out + i) % 32 != 0; ++i)
      out[i] = fromHalf(in[i]);
    for (; i + 8 <= n; i += 8)
      _mm256_stream_ps(out + i, widenEightHalves(in + i));
    _mm_sfence();
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, widenEightHalves(in + i));
  for (; i < n; ++i)
    out[i] = fromHalf(in[i]);
}

inline bool hasF16c() {
  static const bool has =
      __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}
#endif

inline void narrowHalf(const float *in, uint16_t *out, int64_t n) {
#if defined(__x86_64__)
  if (hasF16c())
    return narrowHalfF16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i)
    out[i] = toHalf(in[i]);
}

inline void widenHalf(const uint16_t *in, float *out, int64_t n) {
#if defined(__x86_64__)
  if (hasF16c())
    return widenHalfF16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i)
    out[i] = fromHalf(in[i]);
}

} // namespace gradcomm::half

#endif // GRADCOMM_RUNTIME_HALFFLOAT_H
