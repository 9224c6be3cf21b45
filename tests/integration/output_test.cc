// dslaunch's stdout into a pipe nobody reads (`| less`, not scrolled): the
// control plane must not stall behind it. A real job whose worker prints
// 50 MB, heartbeat_timeout 2 s, the pipe left unread for 10 s.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <thread>

#include "proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// dslaunch started in `dir` with `args`, its stdout the write end of a pipe
// the test reads only when it chooses (a stalled reader); stderr into the
// same pipe (a stopped terminal) or, with `err_path`, into that file.
struct Stalled {
  pid_t pid = -1;
  int read_fd = -1;
};

Stalled StartIntoPipe(const TempDir& dir, const std::vector<std::string>& args, const std::string& err_path = "") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::chdir(dir.path().c_str()) != 0) ::_exit(126);
    ::setenv("DSLAUNCH_COLOR", "never", 1);
    ::setenv("HOME", dir.path().c_str(), 1);
    int err = err_path.empty() ? p[1] : ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    ::dup2(p[1], 1);
    ::dup2(err, 2);
    ::close(p[0]);
    ::close(p[1]);
    std::string dslaunch = DslaunchPath();
    std::vector<char*> argv{dslaunch.data()};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(dslaunch.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(p[1]);
  return {pid, p[0]};
}

// Reads the pipe to its end while dslaunch finishes: (exit code, what was shown).
std::pair<int, std::string> DrainAndWait(const Stalled& s) {
  std::string shown;
  std::thread reader([&] {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(s.read_fd, buf, sizeof(buf))) > 0) shown.append(buf, static_cast<size_t>(n));
  });
  int code = WaitExit(s.pid, seconds(120));
  reader.join();
  ::close(s.read_fd);
  return {code, shown};
}

TEST_CASE("output: a stalled reader of stdout loses no agent; the log dir keeps every line", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 1);
  constexpr int kLines = 1000000;  // 50 bytes each
  WriteFile(dir / "job.yaml",
            "command: [awk, 'BEGIN { for (i = 0; i < " + std::to_string(kLines) +
                "; i++) printf \"%07d the worker prints a lot of output, fast\\n\", i }']\n"
            "elastic:\n  heartbeat_interval: 200ms\n  heartbeat_timeout: 2s\n");
  std::string err_path = dir / "dslaunch.err";
  Stalled st = StartIntoPipe(dir, {"--hostfile", hostfile, "--log-dir", dir / "logs", "job.yaml"}, err_path);
  std::this_thread::sleep_for(seconds(10));  // the stalled reader: 5x the heartbeat timeout
  auto [code, shown] = DrainAndWait(st);
  std::string err = ReadFile(err_path);
  INFO(err);
  CHECK(code == 0);
  CHECK(err.find("lost") == std::string::npos);

  std::string expected;
  char line[64];
  for (int i = 0; i < kLines; ++i) {
    std::snprintf(line, sizeof(line), "%07d the worker prints a lot of output, fast\n", i);
    expected += line;
  }
  CHECK(ReadFile(dir / "logs/rank0.stdout.log") == expected);
  CHECK(shown.find("lines not shown here: the reader of stdout fell behind (every line is in") !=
        std::string::npos);
}

// A terminal stopped with Ctrl-S: stdout and stderr are one stalled pipe.
// dslaunch's own lines (here the restart notice) must not block the event
// loop either: generation 1 runs through the stall without losing an agent.
TEST_CASE("output: a stalled terminal (stdout and stderr) does not stop a restart", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 2, 1);
  WriteFile(dir / "worker.sh",
            "if [ $DSLAUNCH_RESTART_COUNT = 0 ]; then\n"
            "  if [ $RANK = 0 ]; then\n"
            "    awk 'BEGIN { for (i = 0; i < 1000000; i++) printf \"%07d fills the terminal\\n\", i }'\n"
            "    echo yes > flooded; exec sleep 30\n"
            "  fi\n"
            "  while [ ! -e flooded ]; do sleep 0.02; done; exit 3\n"
            "fi\n"
            "sleep 4; echo done $RANK\n");
  WriteFile(dir / "job.yaml",
            "command: [sh, worker.sh]\n"
            "elastic:\n  max_restarts: 1\n  heartbeat_interval: 200ms\n  heartbeat_timeout: 2s\n");
  Stalled st = StartIntoPipe(dir, {"--hostfile", hostfile, "job.yaml"});
  // Stalled until generation 1 has had time to finish (its workers sleep 4 s).
  REQUIRE(WaitForText(dir / "flooded", "yes", seconds(60)));
  std::this_thread::sleep_for(seconds(8));
  auto [code, shown] = DrainAndWait(st);
  const std::string tail = shown.substr(shown.size() > 4000 ? shown.size() - 4000 : 0);
  INFO(tail);
  CHECK(code == 0);
  CHECK(shown.find("dslaunch: restart 1/1: generation 1 on 2 nodes") != std::string::npos);
  CHECK(shown.find("lost") == std::string::npos);
  CHECK(shown.find("dslaunch: all 2 workers exited 0, after 1 restart") != std::string::npos);
}

}  // namespace
}  // namespace ds::testing
