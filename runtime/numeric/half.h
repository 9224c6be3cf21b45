// fp16 (IEEE binary16) and bf16 <-> fp32 conversions, round to nearest even,
// and overflow detection. The trainer keeps fp32 master weights and emulates
// 16-bit compute by quantizing copies (Quantize*), as DeepSpeed's fp16/bf16
// modes do with real 16-bit tensors. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/numeric/half_bits.h"  // the scalar conversions, also on the device

namespace ds::rt {

enum class Precision { kFp32, kFp16, kBf16 };

// Span conversions.
void FloatToHalf(const float* in, uint16_t* out, size_t n);
void HalfToFloat(const uint16_t* in, float* out, size_t n);
void FloatToBf16(const float* in, uint16_t* out, size_t n);
void Bf16ToFloat(const uint16_t* in, float* out, size_t n);

// Span conversions to and from the 16-bit `precision` (kFp16 or kBf16).
void ToHalf16(const float* in, uint16_t* out, size_t n, Precision precision);
void FromHalf16(const uint16_t* in, float* out, size_t n, Precision precision);

// Rounds every value in place to the nearest value representable in
// `precision` (fp32: no-op). Overflowing values become +-inf.
void Quantize(float* data, size_t n, Precision precision);

// True if any value is +-inf or NaN (the loss scaler's overflow test).
bool HasInfOrNan(const float* data, size_t n);

// Sum of squares in double (for the global gradient norm of
// gradient_clipping: each rank sums its partition, then allreduce).
double SumOfSquares(const float* data, size_t n);

const char* PrecisionName(Precision p);  // "fp32", "fp16", "bf16"

}  // namespace ds::rt
