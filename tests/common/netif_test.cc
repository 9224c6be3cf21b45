#include "common/netif.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

TEST_CASE("AcceptedOwner: the uid of the socket a server accepted a connection on, after it stopped listening") {
  const int server = ::socket(AF_INET, SOCK_STREAM, 0), client = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  REQUIRE(::bind(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(server, 1) == 0);
  REQUIRE(::getsockname(server, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  REQUIRE(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  const int accepted = ::accept(server, nullptr, nullptr);
  REQUIRE(accepted >= 0);
  ::close(server);  // a one-shot server: nobody listens on the port any more
  sockaddr_in mine{};
  len = sizeof(mine);
  REQUIRE(::getsockname(client, reinterpret_cast<sockaddr*>(&mine), &len) == 0);
  const int to = ntohs(a.sin_port), from = ntohs(mine.sin_port);
  CHECK(ListenerOwners(to).empty());
  const auto owner = AcceptedOwner(from, to);
  REQUIRE(owner.has_value());
  CHECK(*owner == static_cast<uint32_t>(::geteuid()));
  CHECK_FALSE(AcceptedOwner(from, to == 65535 ? 1 : to + 1).has_value());
  ::close(accepted);
  ::close(client);
}

}  // namespace
}  // namespace ds
