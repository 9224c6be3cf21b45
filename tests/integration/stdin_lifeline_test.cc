// DSLAUNCH_STDIN_LIFELINE, which `dslaunch cluster run` relies on: stdin
// closing stops the job as the signal whose number came last would, and
// without the variable stdin means nothing. Local jobs with real processes.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include "proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

struct Lifeline {
  int read_end = -1, write_end = -1;
  Lifeline() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);  // no child but dslaunch (its stdin) holds an end
    read_end = fds[0], write_end = fds[1];
  }
  ~Lifeline() {
    if (read_end >= 0) ::close(read_end);
    if (write_end >= 0) ::close(write_end);
  }
};

// A 2-worker job that prints its pid and sleeps; dslaunch's stdin is the pipe.
Child StartSleepingJob(const TempDir& dir, Lifeline& l, bool lifeline) {
  auto env = JobEnv(dir);
  if (lifeline) env.emplace_back("DSLAUNCH_STDIN_LIFELINE", "1");
  Child c = Spawn({DslaunchPath(), "--nproc_per_node", "2", "--", "sh", "-c", "echo $$ >> pids; exec sleep 600"},
                  dir.path(), env, l.read_end);
  ::close(l.read_end);
  l.read_end = -1;
  return c;
}

TEST_CASE("stdin lifeline: closing stdin stops the job everywhere, as SIGTERM", "[integration]") {
  TempDir dir;
  Lifeline l;
  Child c = StartSleepingJob(dir, l, true);
  std::vector<pid_t> workers = WaitForPids(dir / "pids", 2, seconds(30));
  REQUIRE(workers.size() == 2);
  ::close(l.write_end);
  l.write_end = -1;
  CHECK(WaitExit(c.pid, seconds(30)) == 143);
  CHECK(AllGone(workers, seconds(10)));
  CHECK(ReadFile(c.err_path).find("stdin closed (DSLAUNCH_STDIN_LIFELINE): stopping the job as SIGTERM would") !=
        std::string::npos);
}

TEST_CASE("stdin lifeline: a signal number written before closing is the one the job stops with", "[integration]") {
  TempDir dir;
  Lifeline l;
  Child c = StartSleepingJob(dir, l, true);
  std::vector<pid_t> workers = WaitForPids(dir / "pids", 2, seconds(30));
  const unsigned char sigint = SIGINT;
  REQUIRE(::write(l.write_end, "junk", 4) == 4);  // anything else on stdin is ignored
  REQUIRE(::write(l.write_end, &sigint, 1) == 1);
  ::close(l.write_end);
  l.write_end = -1;
  CHECK(WaitExit(c.pid, seconds(30)) == 130);
  CHECK(AllGone(workers, seconds(10)));
  CHECK(ReadFile(c.err_path).find("dslaunch received SIGINT; every worker was stopped") != std::string::npos);
}

TEST_CASE("stdin lifeline: without DSLAUNCH_STDIN_LIFELINE a closed stdin changes nothing", "[integration]") {
  TempDir dir;
  Lifeline l;
  REQUIRE(::mkfifo((dir / "go").c_str(), 0600) == 0);
  ::close(l.write_end);  // closed before the job even starts: EOF is there from the first moment
  l.write_end = -1;
  Child c = Spawn({DslaunchPath(), "--nproc_per_node", "1", "--", "sh", "-c", "read line < go; echo released"},
                  dir.path(), JobEnv(dir), l.read_end);
  int fd = ::open((dir / "go").c_str(), O_WRONLY);  // blocks until the worker runs and opens it
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "go\n", 3) == 3);
  ::close(fd);
  CHECK(WaitExit(c.pid, seconds(30)) == 0);
  CHECK(ReadFile(c.out_path).find("released") != std::string::npos);
}

}  // namespace
}  // namespace ds::testing
