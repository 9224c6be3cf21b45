// StackDumper (stack_dump.h): eu-stack or gdb per worker, then gdb for a
// CPython worker's Python frames (python_stack.h), all workers at once on
// one thread each, each child in its own process group with its output on a pipe.
#include "agent/stacks/stack_dump.h"

#include "agent/stacks/python_stack.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace ds {
namespace {

// Forks `argv` with stdout+stderr on a pipe; the read end, or -1 (errno kept in `why`).
pid_t Spawn(const std::vector<std::string>& argv, int* read_fd, std::string* why) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  CStringArray args(argv);
  const pid_t pid = ForkWithSignalsBlocked();
  if (pid == 0) {
    ResetSignalsInChild();
    ::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    CloseOnExecAboveStderr();
    ::execv(args.data()[0], args.data());
    const char msg[] = "exec failed\n";
    (void)!::write(2, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::close(p[1]);
  if (pid < 0) {
    *why = std::string("fork: ") + std::strerror(errno);
    ::close(p[0]);
    return -1;
  }
  *read_fd = p[0];
  return pid;
}

// The thread's name (its comm), "" when it is gone or unreadable.
std::string ThreadName(pid_t pid, long tid) {
  Result<std::string> read = ReadTextFile(fmt::format("/proc/{}/task/{}/comm", pid, tid), "thread name", 64);
  if (!read.ok()) return "";
  std::string name = std::move(*read);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name;
}

}  // namespace

std::string NameThreads(const std::string& text, const std::function<std::string(long tid)>& name_of) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    long tid = 0;
    std::string name;
    if (std::sscanf(line.c_str(), "TID %ld", &tid) == 1 && line == fmt::format("TID {}:", tid) &&
        !(name = name_of(tid)).empty())
      out += fmt::format("TID {} ({}):", tid, Printable(name));
    else
      out += line;
    if (end < text.size()) out += '\n';
    at = end + 1;
  }
  return out;
}

std::string FindTool(const std::string& name, const std::string& path) {
  for (const std::string& dir : Split(path, ':')) {
    if (dir.empty()) continue;
    const std::string full = dir + "/" + name;
    if (::access(full.c_str(), X_OK) == 0) return full;
  }
  return "";
}

std::vector<std::string> StackCommand(const std::string& eu_stack, const std::string& gdb, pid_t pid) {
  if (!eu_stack.empty()) return {eu_stack, "-p", std::to_string(pid)};
  if (!gdb.empty())  // the main thread first (bt), then every thread
    return {gdb, "-p", std::to_string(pid), "-batch", "-nx", "-ex", "bt", "-ex", "thread apply all bt"};
  return {};
}

std::string RunBounded(const std::vector<std::string>& argv, size_t max_bytes,
                       std::chrono::steady_clock::time_point deadline) {
  int fd = -1;
  std::string why;
  const pid_t pid = Spawn(argv, &fd, &why);
  if (pid < 0) return why;
  std::string out;
  bool cut = false, timed_out = false;
  char buf[8192];
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const size_t take = std::min(static_cast<size_t>(n), max_bytes - std::min(max_bytes, out.size()));
    out.append(buf, take);
    cut = cut || take < static_cast<size_t>(n);
  }
  ::close(fd);
  if (timed_out) ::kill(-pid, SIGKILL);  // still running (EOF not seen): its group is ours
  ::waitpid(pid, nullptr, 0);              // ECHILD when the agent's loop reaped it first
  if (cut) out += "\n[cut]\n";
  if (timed_out) out += "\n[timed out]\n";
  return out;
}

StackDumper::StackDumper(std::string path)
    : path_(std::move(path)), event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

StackDumper::~StackDumper() {
  if (worker_.joinable()) worker_.join();
}

void StackDumper::Start(uint32_t generation, std::vector<StackTarget> targets, std::chrono::milliseconds budget) {
  if (busy_) return;  // the one under way answers
  if (worker_.joinable()) worker_.join();
  busy_ = true;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  worker_ = std::thread([this, generation, targets = std::move(targets), deadline] {
    Dump(generation, targets, deadline);
  });
}

void StackDumper::Dump(uint32_t generation, std::vector<StackTarget> targets,
                       std::chrono::steady_clock::time_point deadline) {
  const std::string eu_stack = FindTool("eu-stack", path_), gdb = FindTool("gdb", path_);
  const std::string tool = !eu_stack.empty() ? "eu-stack" : !gdb.empty() ? "gdb" : "";
  msg::Stacks answer{generation, {}};
  std::optional<PythonFrames> python(std::in_place, gdb, msg::kMaxStackBytes);
  std::vector<std::thread> each;  // the workers at once: one hung tool does not starve the others
  answer.ranks.resize(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    answer.ranks[i] = {targets[i].rank, targets[i].pid, tool, ""};
    if (tool.empty()) {
      answer.ranks[i].text = "neither eu-stack (Debian: elfutils) nor gdb found in PATH";
      continue;
    }
    each.emplace_back([&, i] {
      const pid_t pid = targets[i].pid;
      std::string text = RunBounded(StackCommand(eu_stack, gdb, pid), msg::kMaxStackBytes, deadline);
      if (!eu_stack.empty()) text = NameThreads(text, [pid](long tid) { return ThreadName(pid, tid); });
      answer.ranks[i].text = python->Add(pid, text, tool, deadline);  // after the native frames: the same deadline
    });
  }
  for (std::thread& t : each) t.join();
  python.reset();  // its private directory is gone before the answer is announced
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = std::move(answer);
  }
  const uint64_t one = 1;
  (void)!::write(event_.get(), &one, sizeof(one));
}

std::optional<msg::Stacks> StackDumper::Take() {
  uint64_t n = 0;
  (void)!::read(event_.get(), &n, sizeof(n));
  std::lock_guard<std::mutex> lock(mu_);
  if (!done_) return std::nullopt;
  busy_ = false;
  return std::exchange(done_, std::nullopt);
}

}  // namespace ds
