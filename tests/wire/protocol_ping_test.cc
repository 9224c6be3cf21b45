// Ping's stamp and echo (wire/protocol.h, wire_format.md "Agent session"):
// both round-trip, a bare Ping is all zeros, every truncation is refused.
#include <catch2/catch.hpp>

#include "tests/wire/truncations.h"
#include "wire/protocol.h"

namespace ds::msg {
namespace {

TEST_CASE("protocol: Ping round-trips its stamp and its echo", "[protocol][ping]") {
  auto p = Ping::Decode(Ping{0xfedcba9876543210ull, 1234567}.Encode());
  REQUIRE(p.ok());
  CHECK(p->sent_micros == 0xfedcba9876543210ull);
  CHECK(p->echo_micros == 1234567);
  auto bare = Ping::Decode(Ping{}.Encode());
  REQUIRE(bare.ok());
  CHECK(bare->sent_micros == 0);
  CHECK(bare->echo_micros == 0);
}

TEST_CASE("protocol: every truncation of Ping is refused, trailing bytes too", "[protocol][ping]") {
  CheckTruncations(Ping{5, 7});
  CHECK_FALSE(Ping::Decode(Bytes{}).ok());  // wire version 7's empty Ping
}

}  // namespace
}  // namespace ds::msg
