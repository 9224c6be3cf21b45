// KillDescendants with real processes: it kills children and
// grandchildren, but not a spared child nor what that child started.
#include "agent/workers/descendants.h"

#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace ds {
namespace {

// A child running `sh -c script`, in the test process's tree.
pid_t Spawn(const char* script) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

bool Contains(const std::vector<pid_t>& v, pid_t p) { return std::find(v.begin(), v.end(), p) != v.end(); }

TEST_CASE("descendants: a spared child and its own children survive KillDescendants", "[descendants]") {
  const pid_t spared = Spawn("sleep 30 & wait");
  const pid_t doomed = Spawn("sleep 30 & wait");
  // Both shells have started their sleep (a grandchild each).
  for (int i = 0; i < 500; ++i) {
    if (LiveDescendants(::getpid()).size() >= 4) break;
    ::usleep(10000);
  }
  const std::vector<pid_t> before = LiveDescendants(::getpid());
  REQUIRE(before.size() == 4);
  const std::vector<pid_t> without = LiveDescendants(::getpid(), {spared});
  CHECK(without.size() == 2);  // the doomed shell and its sleep
  CHECK(Contains(without, doomed));
  CHECK_FALSE(Contains(without, spared));

  CHECK(KillDescendants({spared}) == 2);
  int status = 0;
  REQUIRE(::waitpid(doomed, &status, 0) == doomed);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  const std::vector<pid_t> after = LiveDescendants(::getpid());
  CHECK(after.size() == 2);  // the spared shell and its sleep
  CHECK(Contains(after, spared));

  CHECK(KillDescendants() == 2);
  REQUIRE(::waitpid(spared, &status, 0) == spared);
  CHECK(WIFSIGNALED(status));
}

}  // namespace
}  // namespace ds
