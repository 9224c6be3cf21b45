#include "runtime/numeric/half.h"

#include <cmath>
#include <cstring>

namespace ds::rt {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

uint16_t FloatToHalf(float f) {
  const uint32_t x = Bits(f);
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

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return FromBits(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return FromBits(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t FloatToBf16(float f) {
  const uint32_t x = Bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float Bf16ToFloat(uint16_t b) { return FromBits(static_cast<uint32_t>(b) << 16); }

void FloatToHalf(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = FloatToHalf(in[i]);
}
void HalfToFloat(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = HalfToFloat(in[i]);
}
void FloatToBf16(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBf16(in[i]);
}
void Bf16ToFloat(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = Bf16ToFloat(in[i]);
}

void Quantize(float* data, size_t n, Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return;
    case Precision::kFp16:
      for (size_t i = 0; i < n; ++i) data[i] = HalfToFloat(FloatToHalf(data[i]));
      return;
    case Precision::kBf16:
      for (size_t i = 0; i < n; ++i) data[i] = Bf16ToFloat(FloatToBf16(data[i]));
      return;
  }
}

bool HasInfOrNan(const float* data, size_t n) {
  // Exponent bits all ones <=> inf or NaN. An OR-reduction over integers
  // vectorizes (a float reduction would not, without reassociation).
  uint32_t any = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, data + i, 4);
    any |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
  }
  return any != 0;
}

double SumOfSquares(const float* data, size_t n) {
  // Eight interleaved partial sums (fixed order, so the result is
  // deterministic) let the compiler use vector lanes.
  constexpr size_t kLanes = 8;
  double part[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) part[l] += static_cast<double>(data[i + l]) * data[i + l];
  double s = 0;
  for (; i < n; ++i) s += static_cast<double>(data[i]) * data[i];
  for (size_t l = 0; l < kLanes; ++l) s += part[l];
  return s;
}

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

void ToHalf16(const float* in, uint16_t* out, size_t n, Precision precision) {
  if (precision == Precision::kFp16) FloatToHalf(in, out, n);
  else FloatToBf16(in, out, n);
}

void FromHalf16(const uint16_t* in, float* out, size_t n, Precision precision) {
  if (precision == Precision::kFp16) HalfToFloat(in, out, n);
  else Bf16ToFloat(in, out, n);
}

}  // namespace ds::rt
