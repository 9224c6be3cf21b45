// Helpers of the gpu tests: vectors to and from the device, random data,
// values in a storage format, and the tolerance a format allows.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <vector>

#include "runtime/device/buffer.h"
#include "runtime/numeric/half.h"
#include "runtime/numeric/rng.h"

namespace ds::rt::dev::testing {

template <typename T>
DeviceBuffer<T> Upload(const std::vector<T>& host) {
  DeviceBuffer<T> d(host.size());
  if (!host.empty()) DS_CUDA(cudaMemcpy(d.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  // A pageable host-to-device cudaMemcpy may return before the data lands,
  // and work on our non-blocking streams does not wait for it.
  DS_CUDA(cudaDeviceSynchronize());
  return d;
}

template <typename T>
std::vector<T> Download(const DeviceBuffer<T>& d) {
  std::vector<T> host(d.size());
  DS_CUDA(cudaDeviceSynchronize());
  if (!host.empty()) DS_CUDA(cudaMemcpy(host.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost));
  return host;
}

inline std::vector<float> Random(size_t n, uint64_t seed, double lo = -2, double hi = 2) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Uniform(lo, hi));
  return v;
}

// Values as stored in `fmt`: fp32 as floats, 16-bit as uint16_t bits, in a
// byte buffer on the device; and back to floats.
struct Stored {
  Precision fmt;
  DeviceBuffer<uint8_t> bytes;
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
};

inline Stored Put(const std::vector<float>& v, Precision fmt) {
  std::vector<uint8_t> raw(v.size() * (fmt == Precision::kFp32 ? 4 : 2));
  if (fmt == Precision::kFp32) std::memcpy(raw.data(), v.data(), raw.size());
  else ToHalf16(v.data(), reinterpret_cast<uint16_t*>(raw.data()), v.size(), fmt);
  return {fmt, Upload(raw)};
}

inline std::vector<float> Get(const Stored& s) {
  std::vector<uint8_t> raw = Download(s.bytes);
  std::vector<float> v(raw.size() / (s.fmt == Precision::kFp32 ? 4 : 2));
  if (s.fmt == Precision::kFp32) std::memcpy(v.data(), raw.data(), raw.size());
  else FromHalf16(reinterpret_cast<const uint16_t*>(raw.data()), v.data(), v.size(), s.fmt);
  return v;
}

// v as `fmt` would store it (the CPU reference's inputs).
inline std::vector<float> Quantized(std::vector<float> v, Precision fmt) {
  Quantize(v.data(), v.size(), fmt);
  return v;
}

// Relative tolerance of a result stored in `fmt` after a few fp32 ops:
// a couple of units in the last place of the format.
inline double Tolerance(Precision fmt) {
  switch (fmt) {
    case Precision::kFp16: return 2e-3;
    case Precision::kBf16: return 1.6e-2;
    case Precision::kFp32: break;
  }
  return 2e-6;
}

// The absolute part of Near's bound: four fp32 ulps of 1, the error of one
// fp32 op that cancels O(1) inputs (z + b near 0, GELU's tail where
// 1 + erf(x) is small and erff differs by an ulp between the sides).
constexpr double kNearAbs = 4.0 / (1 << 23);

// |got - want| <= rel * |want| + abs: relative at every magnitude, below 1
// too (issue 34 item 6: it was rel * max(1, |want|), so a 0.01 could be off
// by 100% in bf16 and pass), with an absolute floor for results near 0.
// NaN is near only NaN; an infinity only itself.
inline bool Near(double got, double want, double rel, double abs = kNearAbs) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (got == want) return true;
  if (std::isinf(want) || std::isinf(got)) return false;  // else inf <= rel * inf passes
  return std::fabs(got - want) <= rel * std::fabs(want) + abs;
}

// max |got - want| / max(1, |want|): for trained weights only, where Adam's
// normalized steps turn summation-order differences at a near-zero gradient
// into whole steps of size lr whatever the weight's magnitude (not Near's
// per-op bound).
inline double MaxRelDiff(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return HUGE_VAL;
  double m = 0;
  for (size_t i = 0; i < got.size(); ++i)
    m = std::max(m, std::fabs(double(got[i]) - want[i]) / std::max(1.0, std::fabs(double(want[i]))));
  return m;
}

// The index of the first element out of tolerance (Near), or -1. A sum
// (a GEMM, a column sum) passes `abs` = rel times the magnitude of its
// terms: its rounding error is relative to the terms, not to a result that
// cancels to near 0.
inline long FirstMismatch(const std::vector<float>& got, const std::vector<float>& want, double rel,
                          double abs = kNearAbs) {
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!Near(got[i], want[i], rel, abs)) return static_cast<long>(i);
  return -1;
}

}  // namespace ds::rt::dev::testing
