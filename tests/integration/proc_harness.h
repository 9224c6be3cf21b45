// Real-process helpers for the integration tests: a temp dir per test,
// spawning dslaunch with output to files, waiting with generous upper bounds
// (they prove "does not hang", they are not timings), and checking that pids
// are gone. Each test only signals processes it started, by pid.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds::testing {

struct Child {
  pid_t pid = -1;
  std::string out_path;
  std::string err_path;
};

// Starts argv[0] in `cwd` with extra environment; stdout/stderr to files in
// cwd; stdin from `stdin_fd` (-1: /dev/null).
Child Spawn(const std::vector<std::string>& argv, const std::string& cwd,
            const std::vector<std::pair<std::string, std::string>>& env = {}, int stdin_fd = -1);
// The exit code (128+signal when signaled), or -1 after `timeout` (then the
// child is SIGKILLed and reaped).
int WaitExit(pid_t pid, std::chrono::milliseconds timeout);
// Runs to completion; returns the exit code.
int Run(const std::vector<std::string>& argv, const std::string& cwd, Child* child,
        std::chrono::milliseconds timeout = std::chrono::seconds(60),
        const std::vector<std::pair<std::string, std::string>>& env = {});

// Waits until `path` holds at least n lines of pids; returns them.
std::vector<pid_t> WaitForPids(const std::string& path, size_t n, std::chrono::milliseconds timeout);
// Waits until the file at `path` contains `text`; false after `timeout`.
bool WaitForText(const std::string& path, const std::string& text, std::chrono::milliseconds timeout);
// True once no pid exists any more (zombies count as gone), within timeout.
bool AllGone(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout);

std::string DslaunchPath();
// The environment a test job runs dslaunch with: no color, HOME in `dir` (no
// stray ~/.dslaunch_env), a 500 ms stop grace, and no default hostfile (a
// machine's /job/hostfile never turns a local test job into a remote one).
std::vector<std::pair<std::string, std::string>> JobEnv(const TempDir& dir);
std::string HostfileFor(const TempDir& dir, int nodes, int slots);

}  // namespace ds::testing
