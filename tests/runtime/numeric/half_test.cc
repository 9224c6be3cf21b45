// fp16 / bf16 conversions: exact bit patterns, round to nearest even,
// overflow to inf, subnormals, and an exhaustive fp16 round trip.
#include "runtime/numeric/half.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace ds::rt;

TEST_CASE("fp16 bit patterns") {
  CHECK(FloatToHalf(1.0f) == 0x3c00);
  CHECK(FloatToHalf(-2.0f) == 0xc000);
  CHECK(FloatToHalf(0.0f) == 0x0000);
  CHECK(FloatToHalf(-0.0f) == 0x8000);
  CHECK(FloatToHalf(65504.0f) == 0x7bff);        // largest finite
  CHECK(FloatToHalf(65519.0f) == 0x7bff);        // rounds down
  CHECK(FloatToHalf(65520.0f) == 0x7c00);        // halfway, rounds to even = inf
  CHECK(FloatToHalf(1e6f) == 0x7c00);
  CHECK(FloatToHalf(-1e6f) == 0xfc00);
  CHECK(FloatToHalf(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(FloatToHalf(std::ldexp(1.0f, -25)) == 0x0000);  // halfway to it: even = 0
  CHECK(FloatToHalf(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(FloatToHalf(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  CHECK(FloatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even
  CHECK(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie -> even (up)
  CHECK(FloatToHalf(std::numeric_limits<float>::infinity()) == 0x7c00);
  const uint16_t nan = FloatToHalf(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK(HalfToFloat(0x3555) == Approx(0.333251953125f));
  CHECK(HalfToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(std::isinf(HalfToFloat(0x7c00)));
}

TEST_CASE("every fp16 value survives the round trip") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(FloatToHalf(f) == h);
  }
}

TEST_CASE("bf16 rounds to nearest even") {
  CHECK(FloatToBf16(1.0f) == 0x3f80);
  CHECK(Bf16ToFloat(0x3f80) == 1.0f);
  CHECK(FloatToBf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);      // tie -> even
  CHECK(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);  // tie -> even (up)
  CHECK(FloatToBf16(1e38f) == 0x7e96);
  CHECK(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(Bf16ToFloat(FloatToBf16(3.4028235e38f))));  // rounds up past max
}

TEST_CASE("Quantize and overflow detection over a span") {
  std::vector<float> v = {1.0f, 70000.0f, 0.1f};
  CHECK_FALSE(HasInfOrNan(v.data(), v.size()));
  Quantize(v.data(), v.size(), Precision::kFp16);
  CHECK(std::isinf(v[1]));
  CHECK(v[2] == HalfToFloat(FloatToHalf(0.1f)));
  CHECK(HasInfOrNan(v.data(), v.size()));
  std::vector<float> w = {0.0f, std::numeric_limits<float>::quiet_NaN()};
  CHECK(HasInfOrNan(w.data(), w.size()));
  std::vector<float> b = {70000.0f};
  Quantize(b.data(), 1, Precision::kBf16);
  CHECK(b[0] == 70144.0f);
  CHECK(SumOfSquares(v.data(), 1) == 1.0);
  CHECK(std::string(PrecisionName(Precision::kBf16)) == "bf16");
}

TEST_CASE("overflow test and sum of squares over long spans") {
  std::vector<float> v(1001, 0.5f);
  CHECK_FALSE(HasInfOrNan(v.data(), v.size()));
  CHECK(SumOfSquares(v.data(), v.size()) == 1001 * 0.25);
  v[1000] = -std::numeric_limits<float>::infinity();
  CHECK(HasInfOrNan(v.data(), v.size()));
  CHECK_FALSE(HasInfOrNan(v.data(), 1000));
  v[3] = std::numeric_limits<float>::max();  // finite
  CHECK_FALSE(HasInfOrNan(v.data(), 1000));
}
