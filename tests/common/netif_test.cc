#include "common/netif.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("netif: loopback routes through the loopback interface", "[netif]") {
  auto r = RouteTo("127.0.0.1");
  REQUIRE(r.ok());
  CHECK(r->local_addr == "127.0.0.1");
  CHECK(r->ifname == "lo");
  auto r3 = RouteTo("127.0.0.3");
  REQUIRE(r3.ok());
  CHECK(r3->ifname == "lo");
}

TEST_CASE("netif: local host names", "[netif]") {
  CHECK(IsLocalHost("localhost"));
  CHECK(IsLocalHost("127.0.0.2"));
  CHECK(IsLocalHost("::1"));
  CHECK(!IsLocalHost("203.0.113.7"));
  CHECK(!IsLocalHost("worker-17.invalid"));
}

TEST_CASE("netif: an unresolvable name is an error naming it", "[netif]") {
  auto r = RouteTo("no-such-host.invalid");
  REQUIRE(!r.ok());
  CHECK(r.status().message().rfind("no-such-host.invalid: ", 0) == 0);
}

}  // namespace
}  // namespace ds
