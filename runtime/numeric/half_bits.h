// The scalar fp16 (IEEE binary16) and bf16 <-> fp32 conversions, round to
// nearest even, as DS_HD functions: the CPU's span conversions (half.h) and
// the CUDA kernels (runtime/device/) round bit for bit alike. Values beyond
// the fp16 range become +-inf; NaN stays NaN (quiet); fp16 subnormals are
// kept. Header-only, pure.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/numeric/host_device.h"

namespace ds::rt {

DS_HD uint32_t FloatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

DS_HD float FloatFromBits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

DS_HD uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                        // below 2^-14: fp16 subnormal or 0
    if (abs < 0x33000000u) return sign;           // below 2^-25: rounds to 0
    const int e = static_cast<int>(abs >> 23);    // biased fp32 exponent, 102..112
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - e;                    // 14..24: result = mant >> shift
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return sign | static_cast<uint16_t>(h);
  }
  // Normal: rebias exponent (127 -> 15) and round the 13 dropped bits.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may reach inf: correct
  return sign | static_cast<uint16_t>(h);
}

DS_HD float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return FloatFromBits(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  return FloatFromBits(sign | ((exp + 112u) << 23) | (mant << 13));
}

DS_HD uint16_t FloatToBf16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

DS_HD float Bf16ToFloat(uint16_t b) { return FloatFromBits(static_cast<uint32_t>(b) << 16); }

// Inf or NaN (the loss scaler's overflow test): the exponent bits all ones.
DS_HD bool IsInfOrNan(float f) { return (FloatBits(f) & 0x7f800000u) == 0x7f800000u; }

}  // namespace ds::rt
