// StackDumper (agent/stacks/stack_dump.h) with real processes: tools are found on
// a path, the command is eu-stack's or gdb's, output is bounded and a tool
// that outlives the deadline is killed, and a real stopped process's stacks
// come back on the events fd (skipped when neither eu-stack nor gdb is
// installed); two real CPython workers' Python frames (function and line)
// come before their native ones, and both go on unharmed (skipped without
// gdb or /usr/bin/python3).
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "agent/stacks/stack_dump.h"
#include "wire/protocol.h"
#include "tests/test_util/skip.h"

namespace ds {
namespace {

using namespace std::chrono_literals;

TEST_CASE("stack dump: tools are looked for on the path; eu-stack first, gdb in batch mode") {
  CHECK(FindTool("sh", "/nonexistent:/bin") == "/bin/sh");
  CHECK(FindTool("no-such-tool-here", "/bin:/usr/bin").empty());
  CHECK(StackCommand("/usr/bin/eu-stack", "/usr/bin/gdb", 42) == std::vector<std::string>{"/usr/bin/eu-stack", "-p", "42"});
  CHECK(StackCommand("", "/usr/bin/gdb", 42) ==
        std::vector<std::string>{"/usr/bin/gdb", "-p", "42", "-batch", "-nx", "-ex", "bt", "-ex", "thread apply all bt"});
  CHECK(StackCommand("", "", 42).empty());
}

TEST_CASE("stack dump: eu-stack's thread headers get the threads' names, nothing else changes") {
  auto names = [](long tid) { return tid == 11 ? std::string("ds-train") : tid == 12 ? std::string("a\x1b[2J") : ""; };
  CHECK(NameThreads("PID 10 - process\nTID 10:\n#0  0x1 main\nTID 11:\n#0  0x2 gloo::Loop\nTID 12:\nTID 11: x\n", names) ==
        "PID 10 - process\nTID 10:\n#0  0x1 main\nTID 11 (ds-train):\n#0  0x2 gloo::Loop\nTID 12 (a\\x1b[2J):\nTID 11: x\n");
  CHECK(NameThreads("TID 11:", names) == "TID 11 (ds-train):");  // no newline at the end stays so
  CHECK(NameThreads("", names).empty());
}

TEST_CASE("stack dump: output is cut at the bound; a tool past the deadline is killed") {
  const std::string cut = RunBounded({"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x"}, 1000,
                                     std::chrono::steady_clock::now() + 60s);
  CHECK(cut == std::string(1000, 'x') + "\n[cut]\n");
  const std::string slow = RunBounded({"/bin/sh", "-c", "echo started; exec sleep 60"}, 1000,
                                      std::chrono::steady_clock::now() + 300ms);
  CHECK(slow == "started\n\n[timed out]\n");
}

TEST_CASE("stack dump: a stopped process's stacks come back on the events fd") {
  StackDumper dumper;
  if (FindTool("eu-stack", "/usr/local/bin:/usr/bin:/bin").empty() &&
      FindTool("gdb", "/usr/local/bin:/usr/bin:/bin").empty()) {
    DS_SKIP("neither eu-stack nor gdb is installed (scripts/install-deps installs elfutils)");
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::raise(SIGSTOP);  // as a worker stopped by the test bed
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, WUNTRACED) == child);  // it is stopped now
  dumper.Start(4, {{7, child}}, 20s);
  pollfd p{dumper.events_fd(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 60000) == 1);
  auto m = dumper.Take();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  REQUIRE(m);
  CHECK(m->generation == 4);
  REQUIRE(m->ranks.size() == 1);
  CHECK(m->ranks[0].rank == 7);
  CHECK(m->ranks[0].pid == child);
  CHECK_FALSE(m->ranks[0].tool.empty());
  INFO(m->ranks[0].text);
  CHECK(m->ranks[0].text.find("#0") != std::string::npos);
}

// A Python worker started with its stdout on a pipe: it writes one byte
// from inside its loop (one line, so the loop's line is where it is
// whenever the byte has been seen).
struct PythonWorker {
  pid_t pid = -1;
  int out = -1;
};

PythonWorker StartPython(const std::string& script, const char* arg) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::close(p[0]);
    ::close(p[1]);
    ::execl("/usr/bin/python3", "python3", script.c_str(), arg, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(p[1]);
  return {pid, p[0]};
}

bool Ready(const PythonWorker& w) {
  pollfd p{w.out, POLLIN, 0};
  char c = 0;
  return ::poll(&p, 1, 60000) == 1 && ::read(w.out, &c, 1) == 1;
}

// The directories the dumper made for Python frames that are still there.
int PythonDirsLeft() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp && *tmp ? tmp : "/tmp";
  const std::string prefix = fmt::format("dsagent-pystacks.{}.", ::getpid());
  int n = 0;
  if (DIR* d = ::opendir(base.c_str())) {
    while (dirent* e = ::readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
    ::closedir(d);
  }
  return n;
}

TEST_CASE("stack dump: a CPython worker's Python frames come first, the worker goes on unharmed") {
  if (FindTool("gdb", "/usr/local/bin:/usr/bin:/bin").empty() || ::access("/usr/bin/python3", X_OK) != 0) {
    DS_SKIP("gdb or /usr/bin/python3 is not installed (scripts/install-deps installs gdb)");
  }
  char dir[] = "/tmp/dsl-pystack-test.XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string script = std::string(dir) + "/stuck.py";
  // A loader thread as training scripts have (it is listed first: the main thread comes last).
  std::ofstream(script) << "import os, sys, threading, time\n"
                           "def spin_in_user_code():\n"
                           "    said = False\n"
                           "    while True: said = said or os.write(1, b's')\n"  // line 4
                           "def wait_for_peers():\n"
                           "    said = False\n"
                           "    while True: said = said or os.write(1, b'w'); time.sleep(60)\n"  // line 7
                           "def load_batches():\n"
                           "    while True: time.sleep(60)\n"
                           "threading.Thread(target=load_batches, daemon=True).start()\n"
                           "spin_in_user_code() if sys.argv[1] == 'spin' else wait_for_peers()\n";
  PythonWorker spinning = StartPython(script, "spin"), waiting = StartPython(script, "wait");
  REQUIRE(Ready(spinning));
  REQUIRE(Ready(waiting));

  StackDumper dumper;
  dumper.Start(2, {{5, spinning.pid}, {6, waiting.pid}}, std::chrono::seconds(30));
  pollfd p{dumper.events_fd(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 90000) == 1);
  auto m = dumper.Take();
  CHECK(PythonDirsLeft() == 0);
  // Both still running, as before; then ended by SIGTERM's default action (not SIGTRAP, not SIGSEGV).
  int status = 0;
  for (const PythonWorker& w : {spinning, waiting}) {
    CHECK(::waitpid(w.pid, &status, WNOHANG) == 0);
    ::kill(w.pid, SIGTERM);
    REQUIRE(::waitpid(w.pid, &status, 0) == w.pid);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM));
    ::close(w.out);
  }
  std::system(fmt::format("rm -rf {}", dir).c_str());
  REQUIRE(m);
  REQUIRE(m->ranks.size() == 2);
  const std::string python = std::string(msg::kPythonFramesHeader) + "\n";
  const std::string native = fmt::format("\n{} ({}):\n", msg::kNativeFramesHeader, m->ranks[0].tool);
  // gdb 13 on a 6.18 kernel cannot call into a process ("Couldn't write extended state status"):
  // the workers must still go on unharmed (above), the frames cannot be had.
  if (m->ranks[0].text.find("gdb cannot call into a process on this kernel") != std::string::npos) {
    WARN("gdb cannot call into a process on this kernel; the Python frames part is skipped");
    return;
  }
  for (const msg::RankStack& r : m->ranks) {
    INFO(r.text);
    CHECK(r.text.rfind(python, 0) == 0);
    CHECK(r.text.find(native) != std::string::npos);
    CHECK(r.text.find(native) > r.text.find(" (most recent call first):\n"));
  }
  CHECK(m->ranks[0].text.find(fmt::format("  File \"{}\", line 4 in spin_in_user_code\n", script)) != std::string::npos);
  CHECK(m->ranks[1].text.find(fmt::format("  File \"{}\", line 7 in wait_for_peers\n", script)) != std::string::npos);
}

}  // namespace
}  // namespace ds
