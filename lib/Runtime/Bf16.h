//===- Bf16.h - bf16 <-> f32 conversions of the runtime ---------*- C++ -*-===//
//
// Private to the runtime (and PipeRuntimeCUDA, whose kernels must give the
// same bits). bf16 is the upper half of an IEEE f32: narrowing rounds to
// nearest, ties to even (overflow to infinity, subnormals kept), as PTX's
// cvt.rn.bf16x2.f32; every NaN becomes the quiet NaN 0x7fff (NaN stays NaN;
// the GPU's NaN bits are not part of the contract). Widening is exact (a
// shift). Used by the bf16 parameter-server transfers
// (`ps_transfer`, docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_BF16_H
#define PIPE_RUNTIME_BF16_H

#include <cstdint>
#include <cstring>

namespace pipe_rt {

inline uint16_t f32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return 0x7fff;
  // Adding 0x7fff plus the lowest kept bit rounds half to even; a carry
  // into the exponent is the correct rounding (up to infinity at the top).
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float bf16ToF32(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// dst[i] = bf16(src[i]) for n elements.
inline void narrowToBf16(uint16_t *dst, const float *src, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = f32ToBf16(src[i]);
}

/// dst[i] = f32(src[i]) for n elements.
inline void widenFromBf16(float *dst, const uint16_t *src, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = bf16ToF32(src[i]);
}

/// dst[i] += f32(src[i]) for n elements.
inline void addFromBf16(float *dst, const uint16_t *src, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] += bf16ToF32(src[i]);
}

} // namespace pipe_rt

#endif // PIPE_RUNTIME_BF16_H
