#include "tests/launcher/spawn/fake_spawner.h"

#include <catch2/catch.hpp>
#include <poll.h>
#include <signal.h>

namespace ds {
namespace {

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

AgentSpec Spec(const std::string& host) {
  AgentSpec s;
  s.host = host;
  s.argv = {"/x/dsagent"};
  return s;
}

TEST_CASE("fake spawner: End makes Running false and exit_fd readable", "[spawner]") {
  FakeSpawner sp;
  auto r = sp.Start({Spec("a"), Spec("b")});
  REQUIRE(r.size() == 2);
  REQUIRE(r[0].ok());
  REQUIRE(r[1].ok());
  REQUIRE(sp.started().size() == 2);
  CHECK(sp.started()[1].host == "b");
  CHECK((*r[0])->Running());
  CHECK_FALSE(Readable((*r[0])->exit_fd()));
  sp.End(0, 4);
  CHECK_FALSE((*r[0])->Running());
  CHECK((*r[0])->ExitStatus() == 4);
  CHECK(Readable((*r[0])->exit_fd()));
  CHECK((*r[1])->Running());  // the other is untouched
  CHECK_FALSE(Readable((*r[1])->exit_fd()));
}

TEST_CASE("fake spawner: Terminate ends with SIGTERM's status; a queued failure names the host", "[spawner]") {
  FakeSpawner sp;
  sp.FailHost("b", Status::IOError("b: connection refused"));
  auto r = sp.Start({Spec("a"), Spec("b")});
  REQUIRE(r[0].ok());
  REQUIRE_FALSE(r[1].ok());
  CHECK(r[1].status().message() == "b: connection refused");
  (*r[0])->Terminate();
  CHECK(sp.Terminated(0));
  CHECK((*r[0])->ExitStatus() == 128 + SIGTERM);
  CHECK(Readable((*r[0])->exit_fd()));
  r.clear();
  sp.End(0, 1);  // safe after the handle is gone; already ended: no change
  auto again = sp.Start({Spec("b")});  // the failure was used up
  CHECK(again[0].ok());
}

}  // namespace
}  // namespace ds
