#include "runtime/numeric/half.h"

namespace ds::rt {

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
  for (size_t i = 0; i < n; ++i) any |= static_cast<uint32_t>(IsInfOrNan(data[i]));
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
