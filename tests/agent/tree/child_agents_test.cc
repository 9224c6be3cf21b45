// ChildAgents with real processes: the token arrives as the first stdin
// line and stdin stays open after it; the AgentEnded of each command carries
// its status and its last stderr lines; a command that cannot run ends with
// 127 and says why.
#include "agent/tree/child_agents.h"

#include <catch2/catch.hpp>
#include <poll.h>
#include <sys/wait.h>

#include <chrono>
#include <mutex>

#include "common/log.h"

namespace ds {
namespace {

// Runs `children` (reading their pipes) until the command of `pid` ends; its AgentEnded.
std::optional<msg::AgentEnded> RunUntilEnded(ChildAgents& children, pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    children.AddPollFds(&fds);
    ::poll(fds.data(), fds.size(), 50);
    for (const pollfd& p : fds)
      if (p.revents) children.OnReadable(p.fd);
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return children.OnExited(pid, status);
  }
  return std::nullopt;
}

pid_t OnlyChild() {
  // The test process has no other children: whoever waitpid(-1) finds is ours.
  siginfo_t info{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    info.si_pid = 0;
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) return info.si_pid;
    ::poll(nullptr, 0, 10);
  }
  return -1;
}

TEST_CASE("child agents: the node's own token is the first stdin line; the reason is the stderr tail", "[tree]") {
  ChildAgents children;
  // Stdin must stay open after the token: `read` of a second line would see EOF at once otherwise.
  const std::string script =
      "read t; [ \"$t\" = tok3n ] || exit 9; "
      "read -t 1 more; rc=$?; [ $rc -gt 128 ] || exit 7; "  // timed out: still open, nothing more
      "echo 'to stdout'; echo 'first' >&2; printf 'ssh: connect to host n2 port 22: Connection refused\\r\\n' >&2; exit 255";
  auto failed = children.Start(msg::StartAgents{{{2, "n2", {"bash", "-c", script}, "tok3n"}}});
  CHECK(failed.empty());
  CHECK(children.running() == 1);
  const pid_t pid = OnlyChild();
  REQUIRE(pid > 0);
  auto ended = RunUntilEnded(children, pid);
  REQUIRE(ended);
  CHECK(ended->node == 2);
  CHECK(ended->exit_code == 255);
  CHECK(ended->signal == 0);
  CHECK(ended->reason == "first\nssh: connect to host n2 port 22: Connection refused");
  CHECK(children.running() == 0);
  CHECK_FALSE(children.OnExited(pid, 0));  // not ours any more
}

TEST_CASE("child agents: a command that cannot run ends with 127 and the reason", "[tree]") {
  ChildAgents children;
  REQUIRE(children.Start(msg::StartAgents{{{5, "n5", {"/nonexistent/dsl-ssh", "n5"}, "t"}}}).empty());
  const pid_t pid = OnlyChild();
  REQUIRE(pid > 0);
  auto ended = RunUntilEnded(children, pid);
  REQUIRE(ended);
  CHECK(ended->node == 5);
  CHECK(ended->exit_code == 127);
  CHECK(ended->reason.find("/nonexistent/dsl-ssh") != std::string::npos);
}

TEST_CASE("child agents: the reason keeps the last kMaxAgentEndedReason bytes", "[tree]") {
  ChildAgents children;
  REQUIRE(children.Start(msg::StartAgents{{{1, "n1", {"sh", "-c", "i=0; while [ $i -lt 200 ]; do "
                                                                   "echo line-$i-xxxxxxxxxxxxxxxx >&2; i=$((i+1)); "
                                                                   "done; echo last >&2; kill -9 $$"}, "t"}}})
              .empty());
  const pid_t pid = OnlyChild();
  auto ended = RunUntilEnded(children, pid);
  REQUIRE(ended);
  CHECK(ended->signal == 9);
  CHECK(ended->reason.size() <= msg::kMaxAgentEndedReason);
  CHECK(ended->reason.size() > msg::kMaxAgentEndedReason - 40);
  CHECK(ended->reason.substr(ended->reason.size() - 4) == "last");
}

TEST_CASE("child agents: a command's output is escaped before it reaches the log", "[tree]") {
  std::mutex mu;
  std::string logged;
  LogSetSink([&](std::string line) {
    std::lock_guard<std::mutex> lock(mu);
    logged += line;
  });
  ChildAgents children;
  // What a hostile sshd or remote shell could print: a terminal escape and a forged dslaunch line.
  REQUIRE(children.Start(msg::StartAgents{{{4, "n4", {"printf", "\\033]0;owned\\007\\rdslaunch: job succeeded\\n"}, "t"}}})
              .empty());
  const pid_t pid = OnlyChild();
  REQUIRE(RunUntilEnded(children, pid));
  LogSetSink(nullptr);
  std::lock_guard<std::mutex> lock(mu);
  CHECK(logged.find('\033') == std::string::npos);
  CHECK(logged.find("\\x1b]0;owned\\x07\\x0ddslaunch: job succeeded") != std::string::npos);
}

}  // namespace
}  // namespace ds
