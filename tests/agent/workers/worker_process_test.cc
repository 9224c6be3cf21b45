// WorkerProcess with real children: output lines, environment as data,
// process-group stop (grandchildren included), exec failure.
#include "agent/workers/worker_process.h"

#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>

#include <poll.h>

#include <chrono>
#include <thread>

#include "wire/protocol.h"

namespace ds {
namespace {

struct Collected {
  std::vector<std::pair<int, std::string>> lines;
  WorkerProcess::LineSink Sink() {
    return [this](int s, const std::string& l) { lines.emplace_back(s, l); };
  }
};

int WaitChild(WorkerProcess& w) {
  int status = 0;
  REQUIRE(::waitpid(w.pid(), &status, 0) == w.pid());
  w.exited = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_CASE("worker: lines from stdout and stderr, env values arrive intact", "[worker]") {
  WorkerLaunch l;
  l.argv = {"/bin/sh", "-c", "printf '%s\\n' \"$V\"; echo err >&2; printf 'no newline'"};
  l.env = {{"V", "a \"b\" $c 'd'"}, {"PATH", "/usr/bin:/bin"}};
  auto w = WorkerProcess::Start(l);
  REQUIRE(w.ok());
  CHECK(WaitChild(**w) == 0);
  Collected c;
  (*w)->DrainAndClose(c.Sink());
  REQUIRE(c.lines.size() == 3);
  CHECK(c.lines[0] == std::make_pair(1, std::string("a \"b\" $c 'd'")));
  CHECK(c.lines[1] == std::make_pair(1, std::string("no newline")));
  CHECK(c.lines[2] == std::make_pair(2, std::string("err")));
}

TEST_CASE("worker: carriage-return updates arrive as progress, the finished line collapsed", "[worker]") {
  WorkerLaunch l;
  l.argv = {"/bin/sh", "-c", "printf '\\r 10%%' >&2; printf '\\r 20%%\\r100%%\\n' >&2; printf 'a\\rb\\r\\n'"};
  l.env = {{"PATH", "/usr/bin:/bin"}};
  auto w = WorkerProcess::Start(l);
  REQUIRE(w.ok());
  CHECK(WaitChild(**w) == 0);
  Collected c;
  (*w)->DrainAndClose(c.Sink());
  std::vector<std::pair<int, std::string>> err;
  for (const auto& [stream, line] : c.lines) {
    if (stream == 1) CHECK(line == "b");
    else err.emplace_back(stream, line);
  }
  REQUIRE_FALSE(err.empty());
  // What reads the pipe at once depends on timing: updates may or may not
  // be seen apart from the final line; the completed line always is.
  CHECK(err.back() == std::make_pair(2, std::string("100%")));
  for (size_t i = 0; i + 1 < err.size(); ++i) CHECK(err[i].first == (2 | msg::kOutputProgress));
}

TEST_CASE("worker: a line in progress with an update is reported live; killed, its text is the last line", "[worker]") {
  WorkerLaunch l;
  l.argv = {"/bin/sh", "-c", "printf '\\r 10%%\\r 20%%' >&2; exec sleep 60"};
  l.env = {{"PATH", "/usr/bin:/bin"}};
  auto w = WorkerProcess::Start(l);
  REQUIRE(w.ok());
  Collected c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.lines.empty() && std::chrono::steady_clock::now() < deadline) {
    pollfd p{(*w)->stderr_fd(), POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) (*w)->ReadPipe((*w)->stderr_fd(), c.Sink());
  }
  REQUIRE(c.lines.size() == 1);
  CHECK(c.lines[0] == std::make_pair(2 | msg::kOutputProgress, std::string(" 20%")));
  (*w)->SignalGroup(SIGKILL);
  CHECK(WaitChild(**w) == 128 + SIGKILL);
  (*w)->DrainAndClose(c.Sink());
  REQUIRE(c.lines.size() == 2);
  CHECK(c.lines[1] == std::make_pair(2, std::string(" 20%")));
}

// --pty: stdout and stderr are terminals of the given size, each its own;
// raw, so every line arrives as written ("\n", not "\r\n"); more than a
// terminal buffers, and the last line without a newline, arrive whole after
// the worker exits (the master's EIO is its end); the worker still leads its
// own process group.
TEST_CASE("worker: with a pty, stdout and stderr are raw terminals of their own", "[worker]") {
  WorkerLaunch l;
  l.argv = {"/bin/sh", "-c",
            "stty size <&1; [ -t 2 ] && echo tty >&2; ps -o pgid= -p $$ | tr -d ' '; echo $$; "
            "i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done; printf tail"};
  l.env = {{"PATH", "/usr/bin:/bin"}};
  l.pty = WorkerLaunch::PtySize{100, 30};
  auto w = WorkerProcess::Start(l);
  REQUIRE(w.ok());
  Collected c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (((*w)->stdout_fd() >= 0 || (*w)->stderr_fd() >= 0) && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    for (int fd : {(*w)->stdout_fd(), (*w)->stderr_fd()})
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (const pollfd& p : fds)
      if (p.revents != 0) (*w)->ReadPipe(p.fd, c.Sink());
  }
  CHECK(WaitChild(**w) == 0);
  std::vector<std::string> out, err;
  for (const auto& [stream, line] : c.lines) {
    CHECK(line.find('\r') == std::string::npos);
    (stream == 1 ? out : err).push_back(line);
  }
  CHECK(err == std::vector<std::string>{"tty"});
  REQUIRE(out.size() == 3 + 3000 + 1);
  CHECK(out[0] == "30 100");
  CHECK(out[1] == out[2]);  // pgid == pid
  CHECK(out[3] == "line0");
  CHECK(out[3002] == "line2999");
  CHECK(out[3003] == "tail");
}

TEST_CASE("worker: stdin is /dev/null and the worker leads its own process group", "[worker]") {
  WorkerLaunch l;
  l.argv = {"/bin/sh", "-c", "cat; ps -o pgid= -p $$ | tr -d ' '; echo $$"};
  l.env = {{"PATH", "/usr/bin:/bin"}};
  auto w = WorkerProcess::Start(l);
  REQUIRE(w.ok());
  CHECK(WaitChild(**w) == 0);
  Collected c;
  (*w)->DrainAndClose(c.Sink());
  REQUIRE(c.lines.size() == 2);
  CHECK(c.lines[0].second == c.lines[1].second);  // pgid == pid
}

TEST_CASE("worker: signalling the group also ends its grandchildren", "[worker]") {
  WorkerLaunch l;
  l.argv = {"/bin/sh", "-c", "sleep 60 & echo $!; wait"};
  l.env = {{"PATH", "/usr/bin:/bin"}};
  auto w = WorkerProcess::Start(l);
  REQUIRE(w.ok());
  Collected c;
  for (int i = 0; i < 500 && c.lines.empty(); ++i) {
    (*w)->ReadPipe((*w)->stdout_fd(), c.Sink());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(c.lines.size() == 1);
  pid_t grandchild = std::stoi(c.lines[0].second);
  (*w)->SignalGroup(SIGTERM);
  CHECK(WaitChild(**w) == 128 + SIGTERM);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = ::kill(grandchild, 0) != 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(gone);
}

TEST_CASE("worker: a missing program exits 127 and says why", "[worker]") {
  WorkerLaunch l;
  l.argv = {"/no/such/binary"};
  auto w = WorkerProcess::Start(l);
  REQUIRE(w.ok());
  CHECK(WaitChild(**w) == 127);
  Collected c;
  (*w)->DrainAndClose(c.Sink());
  REQUIRE(c.lines.size() == 1);
  CHECK(c.lines[0].second == "dsagent: cannot run '/no/such/binary': No such file or directory");
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST_CASE("worker: a stop right after start never runs the agent's handlers in the child", "[worker]") {
  for (int i = 0; i < 20; ++i) {  // races fork/exec on purpose
    WorkerLaunch l;
    l.argv = {"/bin/sleep", "60"};
    auto w = WorkerProcess::Start(l);
    REQUIRE(w.ok());
    (*w)->SignalGroup(SIGTERM);
    CHECK(WaitChild(**w) == 128 + SIGTERM);
  }
}

}  // namespace
}  // namespace ds
