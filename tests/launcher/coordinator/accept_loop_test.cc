// AcceptLoop with real loopback sockets: connections past max_open wait in
// the backlog, unaccepted, until one is Closed(); accepted descriptors are
// close-on-exec and non-blocking; after Stop() nothing listens.
#include "launcher/coordinator/accept_loop.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <vector>

#include <catch2/catch.hpp>

namespace ds {
namespace {

// A TCP socket listening on 127.0.0.1, any port; the port through `port`.
UniqueFd Listener(int* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(fd.get(), 16) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
  *port = ntohs(a.sin_port);
  return fd;
}

// Connects (the kernel completes it from the backlog, accepted or not); -1 on failure.
UniqueFd Connect(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return UniqueFd();
  return fd;
}

// Runs the io_context until `accepted` holds `n`, or 20 s pass.
bool RunUntil(asio::io_context& io, const std::vector<UniqueFd>& accepted, size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (accepted.size() < n && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_one_for(std::chrono::milliseconds(200));
  }
  return accepted.size() >= n;
}

TEST_CASE("accept loop: at most max_open connections; the next is accepted once one is closed", "[accept_loop]") {
  asio::io_context io;
  std::vector<UniqueFd> accepted;
  AcceptLoop loop(io, 2, [&](UniqueFd fd) { accepted.push_back(std::move(fd)); });
  int port = 0;
  REQUIRE(loop.Start(Listener(&port)).ok());
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(Connect(port));
    REQUIRE(clients.back().get() >= 0);
  }
  REQUIRE(RunUntil(io, accepted, 2));
  // The third is in the backlog and the listener is readable: a loop still
  // waiting on it would accept it in any of these polls.
  for (int i = 0; i < 20; ++i) {
    io.restart();
    io.poll();
  }
  CHECK(accepted.size() == 2);
  CHECK(loop.open_connections() == 2);
  for (const UniqueFd& fd : accepted) {
    CHECK((::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
    CHECK((::fcntl(fd.get(), F_GETFL) & O_NONBLOCK) != 0);
  }
  accepted[0].Reset();
  loop.Closed();
  REQUIRE(RunUntil(io, accepted, 3));
  CHECK(loop.open_connections() == 2);

  loop.Stop();
  CHECK_FALSE(loop.listening());
  CHECK(Connect(port).get() < 0);  // nothing listens
  io.restart();
  io.poll();  // the cancelled wait ends without a call
  CHECK(accepted.size() == 3);
}

TEST_CASE("accept loop: at the limit, make_room closes one and the waiting connection is accepted at once",
          "[accept_loop]") {
  asio::io_context io;
  std::vector<UniqueFd> accepted;
  bool room = true;
  int asked = 0;
  AcceptLoop* self = nullptr;
  AcceptLoop loop(io, 2, [&](UniqueFd fd) { accepted.push_back(std::move(fd)); },
                  [&] {
                    ++asked;
                    if (!room) return false;
                    accepted.front().Reset();  // the server closes its oldest
                    self->Closed();
                    return true;
                  });
  self = &loop;
  int port = 0;
  REQUIRE(loop.Start(Listener(&port)).ok());
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(Connect(port));
  REQUIRE(RunUntil(io, accepted, 3));  // the third without any Closed() from outside
  CHECK(asked == 1);
  CHECK(loop.open_connections() == 2);

  // Nothing to close: the next one waits in the backlog, and make_room is
  // not asked again until a connection ends.
  room = false;
  clients.push_back(Connect(port));
  for (int i = 0; i < 20; ++i) {
    io.restart();
    io.poll();
  }
  CHECK(accepted.size() == 3);
  CHECK(asked == 2);
  accepted.back().Reset();
  loop.Closed();
  REQUIRE(RunUntil(io, accepted, 4));
}

TEST_CASE("accept loop: a listener it cannot wait on is an error that says so", "[accept_loop]") {
  asio::io_context io;
  AcceptLoop loop(io, 1, [](UniqueFd) {});
  Status st = loop.Start(UniqueFd(-1));
  CHECK_FALSE(st.ok());
  CHECK(st.message().rfind("could not wait on the listening socket: ", 0) == 0);
}

}  // namespace
}  // namespace ds
