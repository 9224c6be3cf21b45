// StackDumper (agent/stack_dump.h) with real processes: tools are found on
// a path, the command is eu-stack's or gdb's, output is bounded and a tool
// that outlives the deadline is killed, and a real stopped process's stacks
// come back on the events fd (skipped when neither eu-stack nor gdb is
// installed).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "agent/stack_dump.h"

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
    WARN("neither eu-stack nor gdb is installed (scripts/install-deps installs elfutils); skipped");
    return;
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

}  // namespace
}  // namespace ds
