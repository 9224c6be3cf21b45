#include "launcher/spawn/local_spawner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/subprocess.h"
#include "common/unique_fd.h"
#include "launcher/spawn/exit_signal.h"

namespace ds {
namespace {

// pidfd_open(2) (Linux 5.3+); the fd is close-on-exec. Called via syscall:
// older glibc has no wrapper.
int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// A local agent process; the pidfd (exit_fd) turns readable when it exits.
class LocalAgent final : public AgentHandle {
 public:
  LocalAgent(pid_t pid, UniqueFd pidfd, double grace) : pid_(pid), pidfd_(std::move(pidfd)), grace_(grace) {}
  ~LocalAgent() override { Terminate(); }

  bool Running() override {
    Poll();
    return !done_;
  }

  void Terminate() override {
    if (!Running()) return;
    ::kill(-pid_, SIGTERM);
    if (WaitReadable(pidfd_.get(), grace_) && !Running()) return;
    ::kill(-pid_, SIGKILL);
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) Record(status);
  }

  int ExitStatus() override {
    Poll();
    return status_;
  }

  int exit_fd() const override { return pidfd_.get(); }

 private:
  void Poll() {
    if (done_) return;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) Record(status);
    else if (r < 0 && errno == ECHILD) done_ = true;
  }
  void Record(int status) {
    done_ = true;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  pid_t pid_;
  UniqueFd pidfd_;
  double grace_;
  bool done_ = false;
  int status_ = -1;
};

Result<std::unique_ptr<AgentHandle>> StartOne(const AgentSpec& spec, double grace) {
  if (spec.argv.empty()) return Status::InvalidArgument(spec.host + ": empty agent command");
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Status::IOError(fmt::format("{}: pipe: {}", spec.host, std::strerror(errno)));
  const CStringArray argv(spec.argv);
  // Signals blocked across fork: dslaunch's handlers never run in the child.
  pid_t pid = ForkWithSignalsBlocked();
  if (pid < 0) {
    ::close(in[0]);
    ::close(in[1]);
    return Status::IOError(fmt::format("{}: fork: {}", spec.host, std::strerror(errno)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in[0], 0);
    CloseOnExecAboveStderr();  // not the coordinator's socket, nor anything else of dslaunch's
    ResetSignalsInChild();
    ::execv(argv.data()[0], argv.data());
    const char* m = "dslaunch: cannot exec dsagent\n";
    (void)!::write(2, m, std::strlen(m));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(in[0]);
  // Our unreaped child: the pid cannot be reused before the pidfd exists.
  UniqueFd pidfd(PidfdOpen(pid));
  if (pidfd.get() < 0) {
    int e = errno;
    ::close(in[1]);
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return Status::IOError(fmt::format("{}: pidfd_open: {}", spec.host, std::strerror(e)));
  }
  std::string payload = spec.stdin_payload + "\n";
  (void)!::write(in[1], payload.data(), payload.size());  // < PIPE_BUF: never blocks; EPIPE ignored
  ::close(in[1]);
  return std::unique_ptr<AgentHandle>(std::make_unique<LocalAgent>(pid, std::move(pidfd), grace));
}

}  // namespace

std::vector<Result<std::unique_ptr<AgentHandle>>> LocalSpawner::Start(const std::vector<AgentSpec>& specs) {
  // An agent that exits before reading its stdin must not kill us with
  // SIGPIPE (dslaunch ignores SIGPIPE anyway, see RunJob).
  ::signal(SIGPIPE, SIG_IGN);
  std::vector<Result<std::unique_ptr<AgentHandle>>> out;
  for (const auto& s : specs) {
    if (::access(s.argv.empty() ? "" : s.argv[0].c_str(), X_OK) != 0) {
      out.emplace_back(Status::NotFound(fmt::format("{}: dsagent not found at '{}'", s.host,
                                                    s.argv.empty() ? "" : s.argv[0])));
      continue;
    }
    out.push_back(StartOne(s, opt_.stop_grace));
  }
  return out;
}

}  // namespace ds
