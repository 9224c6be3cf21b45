// cuBLAS products in model.cc's row-major terms (gpu label): the three
// shapes the model uses (forward X W^T, weight gradient dZ^T X, input
// gradient dZ W), every input format, beta 0 and 1, against a double
// reference on the same (format-rounded) inputs.
#include "runtime/device/gemm.h"

#include <catch2/catch.hpp>

#include <vector>

#include "runtime/device/buffer.h"
#include "tests/runtime/device/device_test_util.h"

namespace ds::rt::dev {
namespace {

using testing::FirstMismatch;
using testing::Get;
using testing::Put;
using testing::Quantized;
using testing::Random;

// Row-major reference: C = op(A) op(B) + beta C.
std::vector<float> Reference(bool ta, bool tb, int m, int n, int k, const std::vector<float>& a,
                             const std::vector<float>& b, std::vector<float> c, float beta) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        const double x = ta ? a[static_cast<size_t>(p) * m + i] : a[static_cast<size_t>(i) * k + p];
        const double y = tb ? b[static_cast<size_t>(j) * k + p] : b[static_cast<size_t>(p) * n + j];
        s += x * y;
      }
      c[static_cast<size_t>(i) * n + j] = static_cast<float>(s + beta * c[static_cast<size_t>(i) * n + j]);
    }
  return c;
}

TEST_CASE("device: GEMM in row-major terms, the model's three shapes, every format", "[gpu]") {
  Stream stream;
  const int m = 67, n = 45, k = 131;
  struct Shape {
    bool ta, tb;
  };
  for (Shape s : {Shape{false, true}, Shape{true, false}, Shape{false, false}}) {
    for (Precision fmt : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
      for (bool tf32 : {false, true}) {
        if (tf32 && fmt != Precision::kFp32) continue;
        for (float beta : {0.0f, 1.0f}) {
          CAPTURE(s.ta, s.tb, PrecisionName(fmt), tf32, beta);
          Blas blas(stream.get(), tf32);
          const std::vector<float> a = Quantized(Random(static_cast<size_t>(m) * k, 20, -1, 1), fmt);
          const std::vector<float> b = Quantized(Random(static_cast<size_t>(k) * n, 21, -1, 1), fmt);
          const std::vector<float> c0 = Quantized(Random(static_cast<size_t>(m) * n, 22, -1, 1), fmt);
          testing::Stored da = Put(a, fmt), db = Put(b, fmt), dc = Put(c0, fmt);
          blas.Gemm(s.ta, s.tb, m, n, k, da.data(), s.ta ? m : k, db.data(), s.tb ? k : n, fmt, dc.data(), n,
                    fmt, beta);
          stream.Synchronize();
          // Sums of 131 products of magnitude < 1: fp32 accumulation is
          // exact to ~1e-6; TF32 inputs keep 10 mantissa bits. The error is
          // relative to the terms (O(1)), so tol is also the absolute floor
          // where a sum cancels to near 0.
          const double tol = fmt == Precision::kFp32 ? (tf32 ? 5e-3 : 1e-5) : testing::Tolerance(fmt) * 2;
          CHECK(FirstMismatch(Get(dc), Reference(s.ta, s.tb, m, n, k, a, b, c0, beta), tol, tol) == -1);
        }
      }
    }
  }
}

TEST_CASE("device: GEMM with 16-bit inputs and fp32 output (the logits)", "[gpu]") {
  Stream stream;
  Blas blas(stream.get(), false);
  const int m = 33, n = 10, k = 300;
  const std::vector<float> a = Quantized(Random(static_cast<size_t>(m) * k, 23, -1, 1), Precision::kBf16);
  const std::vector<float> w = Quantized(Random(static_cast<size_t>(n) * k, 24, -1, 1), Precision::kBf16);
  testing::Stored da = Put(a, Precision::kBf16), dw = Put(w, Precision::kBf16);
  testing::Stored dc = Put(std::vector<float>(static_cast<size_t>(m) * n), Precision::kFp32);
  blas.Gemm(false, true, m, n, k, da.data(), k, dw.data(), k, Precision::kBf16, dc.data(), n, Precision::kFp32, 0.0f);
  stream.Synchronize();
  const std::vector<float> want = Reference(false, true, m, n, k, a, w, std::vector<float>(m * n), 0.0f);
  CHECK(FirstMismatch(Get(dc), want, 1e-5, 1e-5) == -1);  // sums of O(1) terms: absolute floor too
}

}  // namespace
}  // namespace ds::rt::dev
