// StartChild (agent/workers/child_start.h) is how both a cold worker
// (WorkerProcess::Start) and a warm spare (WarmSpare::Start) begin: each
// path's process must show what the routine sets (its own group, SIGKILL
// on the agent's death, the agent as its declared tracer), and the routine
// keeps the descriptor it is told to keep and closes the rest on exec.
#include "agent/workers/child_start.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "agent/warm/spare.h"
#include "agent/workers/worker_process.h"
#include "common/subprocess.h"
#include "tests/test_util/skip.h"

namespace ds {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

// Prints "pgid-is-pid=<0|1> pdeathsig=<n>", then waits to be killed.
constexpr const char* kReport = R"(import ctypes, os, sys, time
sig = ctypes.c_int(0)
ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
print(f"pgid-is-pid={int(os.getpgid(0) == os.getpid())} pdeathsig={sig.value}", flush=True)
time.sleep(60)
)";

// The first line on the non-blocking pipe `fd`, within 20 s.
std::string FirstLine(int fd) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (out.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) != 1) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  return out.substr(0, out.find('\n'));
}

// Yama's ptrace_scope, or -1 without Yama.
int PtraceScope() {
  std::ifstream f("/proc/sys/kernel/yama/ptrace_scope");
  int scope = -1;
  return f >> scope ? scope : -1;
}

// Whether a child of this process (the agent's stack tools are its
// children) may attach to `pid`: under ptrace_scope 1 only if `pid`
// declared this process its tracer.
bool SiblingMayTrace(pid_t pid) {
  const pid_t tool = ::fork();
  if (tool == 0) ::_exit(::ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) == 0 ? 0 : 1);  // detached at exit
  int status = 0;
  ::waitpid(tool, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void CheckStartedByTheRoutine(const WorkerProcess& w) {
  CHECK(FirstLine(w.stdout_fd()) == "pgid-is-pid=1 pdeathsig=9");
  if (PtraceScope() == 1) CHECK(SiblingMayTrace(w.pid()));
}

void KillAndReap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

TEST_CASE("child start: a cold worker is in its own group, dies with the agent, may be traced by its tools",
          "[process]") {
  if (::access(kPython, X_OK) != 0) DS_SKIP("/usr/bin/python3 is not installed");
  WorkerLaunch l;
  l.argv = {kPython, "-c", kReport};
  l.env = {{"PATH", "/usr/bin:/bin"}};
  auto w = WorkerProcess::Start(l);
  REQUIRE(w.ok());
  CheckStartedByTheRoutine(**w);
  KillAndReap((*w)->pid());
}

TEST_CASE("child start: a warm spare's worker is started the same way", "[process]") {
  if (::access(kPython, X_OK) != 0) DS_SKIP("/usr/bin/python3 is not installed");
  const std::string script = "/tmp/dsl-child-start-" + std::to_string(::getpid()) + ".py";
  std::ofstream(script) << kReport;
  const KeyValues env = {{"PATH", "/usr/bin:/bin"}};
  auto spare = WarmSpare::Start(SpareStart{{kPython}, env, "", {}}, script, {"json"}, /*low_priority=*/false);
  REQUIRE(spare.ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((*spare)->state() == SpareState::kImporting && std::chrono::steady_clock::now() < deadline) {
    pollfd p{(*spare)->report_fd(), POLLIN, 0};
    if (::poll(&p, 1, 1000) == 1) (*spare)->OnReadable();
  }
  REQUIRE((*spare)->state() == SpareState::kReady);
  WorkerLaunch launch;
  launch.env = env;
  auto w = (*spare)->HandOff(launch, {script});
  REQUIRE(w.ok());
  CheckStartedByTheRoutine(**w);
  KillAndReap((*w)->pid());
  ::unlink(script.c_str());
}

TEST_CASE("child start: the kept descriptor reaches the program, no other of the agent's does", "[process]") {
  int keep[2], other[2], out[2];
  REQUIRE(::pipe2(keep, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(other, 0) == 0);  // not close-on-exec here: the routine must close it anyway
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  const std::string script = "ls /proc/self/fd | sort -n | tr '\\n' ' '";
  const CStringArray argv(std::vector<std::string>{"/bin/sh", "-c", script});
  const CStringArray envp(KeyValues{{"PATH", "/usr/bin:/bin"}});
  ChildStart c;
  c.argv = argv.data();
  c.envp = envp.data();
  c.stdout_fd = out[1];
  c.stderr_fd = out[1];
  c.keep_fd = keep[0];
  c.working_dir = "/";
  auto pid = StartChild(c);
  REQUIRE(pid.ok());
  ::close(out[1]);
  std::string listed;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof(buf))) > 0;) listed.append(buf, static_cast<size_t>(n));
  int status = 0;
  ::waitpid(*pid, &status, 0);
  CHECK(WIFEXITED(status));
  // 0, 1, 2, the kept end, and the descriptor ls opens for /proc/self/fd.
  INFO("open in the child: " << listed);
  CHECK(listed.find(" " + std::to_string(keep[0]) + " ") != std::string::npos);
  CHECK(listed.find(" " + std::to_string(other[0]) + " ") == std::string::npos);
  CHECK(listed.find(" " + std::to_string(other[1]) + " ") == std::string::npos);
  for (int fd : {keep[0], keep[1], other[0], other[1], out[0]}) ::close(fd);
}

}  // namespace
}  // namespace ds
