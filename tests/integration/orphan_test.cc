// No process of a job outlives it (agent/workers/descendants.h): a worker's daemon
// (setsid + double fork, outside the worker's process group) is gone when
// the job ends by exit 0, by a failure or by SIGINT, and when a restart
// stops its generation. Real jobs.
#include <catch2/catch.hpp>
#include <signal.h>

#include "proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// Starts a daemon that sleeps 300 s and writes its pid to daemon.$DSLAUNCH_GENERATION.
const char* kStartDaemon =
    "setsid sh -c 'sleep 300 & echo $! > daemon.tmp.$DSLAUNCH_GENERATION' </dev/null >/dev/null 2>&1\n"
    "while [ ! -s daemon.tmp.$DSLAUNCH_GENERATION ]; do sleep 0.01; done\n"
    "mv daemon.tmp.$DSLAUNCH_GENERATION daemon.$DSLAUNCH_GENERATION\n";

// Runs `tail` after kStartDaemon on one node, one slot; returns the daemon's pid.
pid_t StartJob(const TempDir& dir, const std::string& tail, const std::string& job, Child* c) {
  WriteFile(dir / "worker.sh", std::string(kStartDaemon) + tail);
  WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\n" + job);
  *c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 1, 1), "job.yaml"}, dir.path(), JobEnv(dir));
  auto pids = WaitForPids(dir / "daemon.0", 1, seconds(30));
  REQUIRE(pids.size() == 1);
  return pids[0];
}

// dslaunch ends with `expected`, and the daemon is gone (killed here if not,
// so that a failing run leaks nothing).
void CheckEndsWithoutDaemon(const Child& c, pid_t daemon, int expected) {
  int code = WaitExit(c.pid, seconds(30));
  INFO(ReadFile(c.err_path));
  CHECK(code == expected);
  CHECK(AllGone({daemon}, seconds(5)));
  if (!AllGone({daemon}, seconds(0))) ::kill(daemon, SIGKILL);
}

TEST_CASE("orphans: a worker's daemon is gone after the job exits 0", "[integration]") {
  TempDir dir;
  Child c;
  pid_t daemon = StartJob(dir, "exit 0\n", "", &c);
  CheckEndsWithoutDaemon(c, daemon, 0);
}

TEST_CASE("orphans: a worker's daemon is gone after the job fails", "[integration]") {
  TempDir dir;
  Child c;
  pid_t daemon = StartJob(dir, "exit 3\n", "", &c);
  CheckEndsWithoutDaemon(c, daemon, 3);
}

TEST_CASE("orphans: a worker's daemon is gone after SIGINT to dslaunch", "[integration]") {
  TempDir dir;
  Child c;
  pid_t daemon = StartJob(dir, "exec sleep 60\n", "", &c);
  REQUIRE(::kill(c.pid, SIGINT) == 0);
  CheckEndsWithoutDaemon(c, daemon, 130);
}

TEST_CASE("orphans: a restart stops the generation's daemons before the next one runs", "[integration]") {
  TempDir dir;
  Child c;
  // Generation 0 fails after starting its daemon; generation 1 waits for the
  // test to look, then succeeds.
  pid_t daemon = StartJob(dir,
                          "[ $DSLAUNCH_GENERATION = 0 ] && exit 3\n"
                          "echo gen1 > gen1\n"
                          "while [ ! -e looked ]; do sleep 0.05; done\n",
                          "elastic: {max_restarts: 1}\n", &c);
  REQUIRE(WaitForText(dir / "gen1", "gen1", seconds(30)));
  bool gone = AllGone({daemon}, seconds(5));  // while generation 1 still runs
  WriteFile(dir / "looked", "");
  int code = WaitExit(c.pid, seconds(30));
  INFO(ReadFile(c.err_path));
  CHECK(gone);
  CHECK(code == 0);
  auto second = WaitForPids(dir / "daemon.1", 1, seconds(0));
  CHECK(AllGone(second, seconds(5)));
  for (pid_t p : {daemon, second.empty() ? daemon : second[0]})
    if (!AllGone({p}, seconds(0))) ::kill(p, SIGKILL);
}

}  // namespace
}  // namespace ds::testing
