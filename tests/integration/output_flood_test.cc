// A fast writer never starves its agent (agent_session.h): a worker that
// writes as fast as it can (`yes`) leaves the agent answering the
// coordinator (no "agent lost" with heartbeat_timeout 2s) and a SIGINT to
// dslaunch acting at once. Real job; the output goes to a file.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include "proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

TEST_CASE("flood: a worker running `yes` keeps its agent and SIGINT still ends the job quickly",
          "[integration]") {
  TempDir dir;
  WriteFile(dir / "job.yaml",
            "command: [sh, -c, yes]\n"
            "elastic: {heartbeat_interval: 500ms, heartbeat_timeout: 2s}\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 1, 1), "job.yaml"}, dir.path(),
                  JobEnv(dir));
  // Four heartbeat timeouts of flooding: before the fix the agent read the
  // pipe in an unbounded loop and blocked writing to the coordinator.
  std::this_thread::sleep_for(seconds(8));
  int status = 0;
  bool running = ::waitpid(c.pid, &status, WNOHANG) == 0;
  CHECK(running);
  auto t0 = steady_clock::now();
  if (running) ::kill(c.pid, SIGINT);
  int code = running ? WaitExit(c.pid, seconds(30)) : -1;
  auto took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - t0);
  std::string err = ReadFile(c.err_path);
  INFO(err << "SIGINT to exit: " << took.count() << " ms");
  CHECK(code == 130);
  CHECK(took < milliseconds(4000));  // twice heartbeat_timeout; measured 0.45-0.6 s, 4.5-13 s before
  CHECK(err.find("lost") == std::string::npos);
  CHECK(err.find("dslaunch received SIGINT") != std::string::npos);
}

}  // namespace
}  // namespace ds::testing
