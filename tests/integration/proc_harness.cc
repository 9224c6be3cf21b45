#include "proc_harness.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <thread>

namespace ds::testing {

using Clock = std::chrono::steady_clock;

Child Spawn(const std::vector<std::string>& argv, const std::string& cwd,
            const std::vector<std::pair<std::string, std::string>>& env, int stdin_fd) {
  Child c;
  c.out_path = cwd + "/dslaunch.out";
  c.err_path = cwd + "/dslaunch.err";
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    int out = ::open(c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(c.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = stdin_fd >= 0 ? stdin_fd : ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  c.pid = pid;
  return c;
}

int WaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (Clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int Run(const std::vector<std::string>& argv, const std::string& cwd, Child* child,
        std::chrono::milliseconds timeout, const std::vector<std::pair<std::string, std::string>>& env) {
  *child = Spawn(argv, cwd, env);
  return WaitExit(child->pid, timeout);
}

bool WaitForText(const std::string& path, const std::string& text, std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  while (ReadFile(path).find(text) == std::string::npos) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::vector<pid_t> WaitForPids(const std::string& path, size_t n, std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  std::vector<pid_t> pids;
  while (Clock::now() < until) {
    pids.clear();
    std::istringstream in(ReadFile(path));
    long p;
    while (in >> p) pids.push_back(static_cast<pid_t>(p));
    if (pids.size() >= n) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pids;
}

namespace {
bool Gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}
}  // namespace

bool AllGone(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  while (true) {
    bool all = true;
    for (pid_t p : pids) all = all && Gone(p);
    if (all) return true;
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<std::pair<std::string, std::string>> JobEnv(const TempDir& dir) {
  return {{"DSLAUNCH_COLOR", "never"},
          {"HOME", dir.path()},
          {"DSLAUNCH_STOP_GRACE", "500ms"},
          {"DSLAUNCH_DEFAULT_HOSTFILE", dir / "no-default-hostfile"}};
}

std::string DslaunchPath() { return DSLAUNCH_TEST_DSLAUNCH; }

std::string HostfileFor(const TempDir& dir, int nodes, int slots) {
  std::string text;
  for (int i = 1; i <= nodes; ++i) text += "127.0.0." + std::to_string(i) + " slots=" + std::to_string(slots) + "\n";
  std::string path = dir / "hostfile";
  WriteFile(path, text);
  return path;
}

}  // namespace ds::testing
