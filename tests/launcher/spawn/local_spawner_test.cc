#include "launcher/spawn/local_spawner.h"

#include <catch2/catch.hpp>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "launcher/spawn/exit_signal.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "tests/test_util/wait_until.h"

namespace ds {
namespace {

using testing::WaitUntil;

TEST_CASE("local spawner: the secret arrives on stdin, not in argv", "[spawner]") {
  testing::TempDir tmp("dslaunch-spawner");
  const std::string out = tmp / "out";
  AgentSpec s;
  s.host = "127.0.0.1";
  s.argv = {"/bin/sh", "-c", "read line; echo \"$line\" > " + out + "; echo \"$0 $*\" >> " + out};
  s.stdin_payload = "s3cret";
  LocalSpawner sp;
  auto r = sp.Start({s});
  REQUIRE(r.size() == 1);
  REQUIRE(r[0].ok());
  auto& h = *r[0];
  REQUIRE(WaitUntil([&] { return !h->Running(); }));
  CHECK(h->ExitStatus() == 0);
  CHECK(testing::ReadFile(out) == "s3cret\n/bin/sh \n");
}

TEST_CASE("local spawner: terminate ends an agent that ignores SIGTERM", "[spawner]") {
  testing::TempDir tmp("dslaunch-spawner");
  const std::string ready = tmp / "ready";
  AgentSpec s;
  s.host = "127.0.0.2";
  s.argv = {"/bin/sh", "-c", "trap '' TERM; echo > " + ready + "; while :; do sleep 1; done"};
  LocalSpawner sp(LocalSpawnerOptions{0.1});
  auto r = sp.Start({s});
  REQUIRE(r[0].ok());
  auto& h = *r[0];
  REQUIRE(WaitUntil([&] { return ::access(ready.c_str(), F_OK) == 0; }));  // the trap is set
  ::unlink(ready.c_str());
  CHECK(h->Running());
  h->Terminate();
  CHECK(!h->Running());
  CHECK(h->ExitStatus() == 137);
}

TEST_CASE("local spawner: a signal right after start takes the default action in the child", "[spawner]") {
  AgentSpec s;
  s.host = "127.0.0.3";
  s.argv = {"/bin/sleep", "60"};
  LocalSpawner sp(LocalSpawnerOptions{2.0});
  for (int i = 0; i < 20; ++i) {  // races fork/exec on purpose
    auto r = sp.Start({s});
    REQUIRE(r[0].ok());
    (*r[0])->Terminate();
    CHECK((*r[0])->ExitStatus() == 128 + SIGTERM);
  }
}

TEST_CASE("local spawner: exit_fd becomes readable when the agent ends, and stays so", "[spawner]") {
  testing::TempDir tmp("dslaunch-spawner");
  const std::string go = tmp / "go";
  AgentSpec s;
  s.host = "127.0.0.4";
  s.argv = {"/bin/sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.01; done; exit 5"};
  LocalSpawner sp;
  auto r = sp.Start({s});
  REQUIRE(r[0].ok());
  auto& h = *r[0];
  REQUIRE(h->exit_fd() >= 0);
  CHECK_FALSE(WaitReadable(h->exit_fd(), 0.1));  // still running
  CHECK(h->Running());
  std::ofstream(go) << "";
  CHECK(WaitReadable(h->exit_fd(), 10));
  CHECK_FALSE(h->Running());
  CHECK(h->ExitStatus() == 5);
  CHECK(WaitReadable(h->exit_fd(), 0));  // reaped: still readable
}

TEST_CASE("local spawner: exit_fd is readable after Terminate", "[spawner]") {
  AgentSpec s;
  s.host = "127.0.0.5";
  s.argv = {"/bin/sleep", "60"};
  LocalSpawner sp(LocalSpawnerOptions{5.0});
  auto r = sp.Start({s});
  REQUIRE(r[0].ok());
  auto& h = *r[0];
  auto t0 = std::chrono::steady_clock::now();
  h->Terminate();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4));  // woken by the exit, not the grace
  CHECK(WaitReadable(h->exit_fd(), 0));
  CHECK(h->ExitStatus() == 128 + SIGTERM);
}

TEST_CASE("local spawner: one result per spec, a missing binary names the host", "[spawner]") {
  AgentSpec good;
  good.host = "a";
  good.argv = {"/bin/true"};
  AgentSpec bad;
  bad.host = "b";
  bad.argv = {"/no/dsagent"};
  LocalSpawner sp;
  auto r = sp.Start({good, bad});
  REQUIRE(r.size() == 2);
  CHECK(r[0].ok());
  REQUIRE(!r[1].ok());
  CHECK(r[1].status().message() == "b: dsagent not found at '/no/dsagent'");
}

}  // namespace
}  // namespace ds
