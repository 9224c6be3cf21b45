#include "launcher/cluster/command_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "common/strings.h"
#include "common/subprocess.h"

namespace ds {
namespace {

int ExitCodeOf(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// Exec in the child; a failure is reported as exit code 127 plus a line on
// the stderr the parent reads.
[[noreturn]] void ExecChild(const CStringArray& argv) {
  CloseOnExecAboveStderr();
  ResetSignalsInChild();
  ::execvp(argv.data()[0], argv.data());
  const char* prefix = "cannot run ";
  (void)!::write(2, prefix, std::strlen(prefix));
  (void)!::write(2, argv.data()[0], std::strlen(argv.data()[0]));
  const char* why = errno == ENOENT ? ": not found in PATH\n" : ": exec failed\n";
  (void)!::write(2, why, std::strlen(why));
  ::_exit(127);
}

Result<int> Wait(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::IOError(std::string("waitpid: ") + std::strerror(errno));
  }
  return ExitCodeOf(status);
}

class ProcessRunner : public CommandRunner {
 public:
  Result<CommandResult> Capture(const std::vector<std::string>& argv, const std::string& input) override {
    if (argv.empty()) return Status::Internal("Capture: empty command");
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return PipeError();
    if (::pipe2(out, O_CLOEXEC) != 0) { CloseAll({in[0], in[1]}); return PipeError(); }
    if (::pipe2(err, O_CLOEXEC) != 0) { CloseAll({in[0], in[1], out[0], out[1]}); return PipeError(); }
    CStringArray args(argv);
    pid_t pid = ForkWithSignalsBlocked();
    if (pid < 0) {
      CloseAll({in[0], in[1], out[0], out[1], err[0], err[1]});
      return Status::IOError(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ExecChild(args);
    }
    CloseAll({in[0], out[1], err[1]});
    CommandResult r;
    Pump(in[1], input, out[0], &r.out, err[0], &r.err);
    DS_ASSIGN_OR_RETURN(r.exit_code, Wait(pid));
    return r;
  }

  Result<int> Passthrough(const std::vector<std::string>& argv) override {
    if (argv.empty()) return Status::Internal("Passthrough: empty command");
    CStringArray args(argv);
    pid_t pid = ForkWithSignalsBlocked();
    if (pid < 0) return Status::IOError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
      ExecChild(args);
    }
    return Wait(pid);
  }

 private:
  static Status PipeError() { return Status::IOError(std::string("pipe: ") + std::strerror(errno)); }
  static void CloseAll(std::initializer_list<int> fds) {
    for (int fd : fds) ::close(fd);
  }

  // Writes `input` to `in_fd` (then closes it) while reading both outputs to
  // their end, so that neither side can block the other.
  static void Pump(int in_fd, const std::string& input, int out_fd, std::string* out, int err_fd,
                   std::string* err) {
    size_t written = 0;
    if (input.empty()) { ::close(in_fd); in_fd = -1; }
    if (in_fd >= 0) ::fcntl(in_fd, F_SETFL, O_NONBLOCK);
    char buf[65536];
    while (in_fd >= 0 || out_fd >= 0 || err_fd >= 0) {
      pollfd fds[3] = {{in_fd, POLLOUT, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (in_fd >= 0 && fds[0].revents) {
        ssize_t n = ::write(in_fd, input.data() + written, input.size() - written);
        if (n > 0) written += static_cast<size_t>(n);
        if ((n < 0 && errno != EAGAIN) || written == input.size()) { ::close(in_fd); in_fd = -1; }
      }
      int* fdp[2] = {&out_fd, &err_fd};
      std::string* dst[2] = {out, err};
      for (int i = 0; i < 2; ++i) {
        if (*fdp[i] < 0 || !fds[i + 1].revents) continue;
        ssize_t n = ::read(*fdp[i], buf, sizeof buf);
        if (n > 0) {
          dst[i]->append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          ::close(*fdp[i]);
          *fdp[i] = -1;
        }
      }
    }
    if (in_fd >= 0) ::close(in_fd);
  }
};

}  // namespace

std::unique_ptr<CommandRunner> MakeProcessRunner() {
  // A command that exits before reading its input must not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  return std::make_unique<ProcessRunner>();
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) line += (line.empty() ? "" : " ") + ShellQuote(a);
  return line;
}

Result<std::string> CaptureOk(CommandRunner& runner, const std::vector<std::string>& argv, const std::string& input) {
  DS_ASSIGN_OR_RETURN(CommandResult r, runner.Capture(argv, input));
  if (r.exit_code == 0) return r.out;
  std::string why(Trim(r.err.empty() ? r.out : r.err));
  // The end of a long error says what went wrong; keep its last 1 KiB.
  if (why.size() > 1024) why = "..." + why.substr(why.size() - 1024);
  return Status::Unavailable(CommandLine(argv) + " (exit code " + std::to_string(r.exit_code) + ")" +
                             (why.empty() ? "" : ": " + why));
}

}  // namespace ds
