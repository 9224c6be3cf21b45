// The gpu tests' tolerance helpers, on the CPU (label unit): Near() is
// relative below 1 too (issue 34 item 6), with an absolute floor only near
// 0, and a sum's caller can widen that floor.
#include "tests/runtime/device/device_test_util.h"

#include <catch2/catch.hpp>

#include <limits>

namespace ds::rt::dev::testing {
namespace {

TEST_CASE("Near: relative below 1, an absolute floor near 0, NaN only as NaN", "[unit]") {
  // bf16's tolerance: 1.6e-2. Before issue 34 a 0.01 off by 100% passed
  // (the bound was rel * max(1, |want|)).
  CHECK_FALSE(Near(0.02, 0.01, 1.6e-2));
  CHECK_FALSE(Near(0.5 * 1.02, 0.5, 1.6e-2));
  CHECK(Near(0.5 * 1.01, 0.5, 1.6e-2));
  CHECK(Near(1000 * (1 + 1e-6), 1000, 2e-6));
  CHECK_FALSE(Near(1000 * (1 + 3e-6), 1000, 2e-6));
  // Near 0: a few fp32 ulps of 1 absolute, no more.
  CHECK(Near(3e-7, 0, 2e-6));
  CHECK_FALSE(Near(1e-6, 0, 2e-6));
  // A sum passes its own floor.
  CHECK(Near(1e-6, 0, 1e-5, 1e-5));
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK(Near(nan, nan, 1e-3));
  CHECK_FALSE(Near(0, nan, 1e-3));
  CHECK_FALSE(Near(nan, 0, 1e-3));
  CHECK(Near(inf, inf, 1e-3));
  CHECK_FALSE(Near(-inf, inf, 1e-3));
  CHECK_FALSE(Near(1e30, inf, 1e-3));
  CHECK(FirstMismatch({1.f, 0.01f, 3.f}, {1.f, 0.02f, 3.f}, 1.6e-2) == 1);
  CHECK(FirstMismatch({1.f, 0.01f}, {1.f, 0.01f}, 0) == -1);
}

}  // namespace
}  // namespace ds::rt::dev::testing
