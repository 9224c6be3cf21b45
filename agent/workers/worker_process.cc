#include "agent/workers/worker_process.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>

#include <fmt/format.h>

#include "agent/workers/control_channel.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "wire/protocol.h"

namespace ds {

void StartWorkerChild(pid_t agent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != agent) ::_exit(137);  // the agent died before prctl
  // Yama's ptrace_scope 1 (Ubuntu's default) lets only a declared tracer and
  // its descendants attach: the agent's hang stack tools (eu-stack, gdb) are
  // its children. It lasts across exec; EINVAL without Yama, which is fine.
  ::prctl(PR_SET_PTRACER, agent, 0, 0, 0);
}

namespace {

// In the child: the parts of one message to its stderr, with write(2) only.
void WriteToStderr(std::initializer_list<const char*> parts) {
  for (const char* p : parts) (void)!::write(2, p, std::strlen(p));
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(const WorkerLaunch& l, char* const* argv, char* const* envp, const cpu_set_t* cpus,
                            int in, int out, int err, int ctl, pid_t parent) {
  StartWorkerChild(parent);
  int stdin_fd = in >= 0 ? in : ::open("/dev/null", O_RDONLY);
  if (stdin_fd >= 0) ::dup2(stdin_fd, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  CloseOnExecAboveStderr();  // nothing of the agent's (sockets, snapshot files) reaches the worker
  // ... but the worker's end of its control channel, at kControlFd (dup2
  // clears close-on-exec; the same number keeps it, so clear it by hand).
  if (ctl >= 0 && (ctl == kControlFd ? ::fcntl(ctl, F_SETFD, 0) : ::dup2(ctl, kControlFd)) < 0) {
    WriteToStderr({"dsagent: cannot pass the control channel: ", std::strerror(errno), "\n"});
    ::_exit(127);
  }
  // Signals were blocked across fork: the agent's handlers (which write to
  // its self-pipe) must never run in the child.
  ResetSignalsInChild();
  if (cpus != nullptr && ::sched_setaffinity(0, sizeof(cpu_set_t), cpus) != 0) {
    const char* m = "dsagent: sched_setaffinity failed for the worker's cores\n";
    (void)!::write(2, m, std::strlen(m));
    ::_exit(127);
  }
  if (!l.working_dir.empty() && ::chdir(l.working_dir.c_str()) != 0) {
    WriteToStderr({"dsagent: cannot start in the working directory ", l.working_dir.c_str(), ": ",
                   std::strerror(errno), " (set working_dir: in the job file, or start dslaunch in a "
                   "directory that exists on every node)\n"});
    ::_exit(127);
  }
  ::execvpe(argv[0], argv, envp);
  WriteToStderr({"dsagent: cannot run '", argv[0], "': ", std::strerror(errno), "\n"});
  ::_exit(127);
}

// A pseudo-terminal pair as a pipe would be: ends[0] the master (the agent
// reads), ends[1] the slave (the worker's stream); both close-on-exec. Raw
// mode, so the worker's "\n" is not turned into "\r\n".
Status OpenPty(const WorkerLaunch::PtySize& size, int ends[2]) {
  auto fail = [&](const char* what) {
    const int saved = errno;
    for (int i : {0, 1})
      if (ends[i] >= 0) ::close(ends[i]);
    ends[0] = ends[1] = -1;
    return Status::IOError(fmt::format("pseudo-terminal ({}): {}", what, std::strerror(saved)));
  };
  ends[0] = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (ends[0] < 0) return fail("posix_openpt");
  char name[128];
  if (::grantpt(ends[0]) != 0 || ::unlockpt(ends[0]) != 0 || ::ptsname_r(ends[0], name, sizeof(name)) != 0)
    return fail("unlockpt");
  ends[1] = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (ends[1] < 0) return fail(name);
  termios mode{};
  if (::tcgetattr(ends[1], &mode) != 0) return fail("tcgetattr");
  ::cfmakeraw(&mode);
  const winsize window{size.rows, size.columns, 0, 0};
  if (::tcsetattr(ends[1], TCSANOW, &mode) != 0 || ::ioctl(ends[0], TIOCSWINSZ, &window) != 0)
    return fail("window size");
  return Status::OK();
}

}  // namespace

Status WorkerProcess::OpenOutput(const WorkerLaunch& l, int ends[2]) {
  if (l.pty) return OpenPty(*l.pty, ends);
  if (::pipe2(ends, O_CLOEXEC) == 0) return Status::OK();
  return Status::IOError(fmt::format("pipe: {}", std::strerror(errno)));
}

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::Start(const WorkerLaunch& l) {
  if (l.argv.empty()) return Status::InvalidArgument("empty worker command");
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : l.cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return Status::InvalidArgument(fmt::format("CPU {} is out of range", c));
    CPU_SET(c, &cpus);
  }
  int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {inp[0], inp[1], outp[0], outp[1], errp[0], errp[1]})
      if (fd >= 0) ::close(fd);
  };
  if (!l.stdin_line.empty() && ::pipe2(inp, O_CLOEXEC) != 0)
    return Status::IOError(fmt::format("pipe: {}", std::strerror(errno)));
  Status opened = OpenOutput(l, outp);
  if (opened.ok()) opened = OpenOutput(l, errp);
  if (!opened.ok()) {
    close_all();
    return opened;
  }
  std::pair<UniqueFd, UniqueFd> ctl;
  if (l.control) {
    auto pair = OpenControlPair();
    if (!pair.ok()) {
      close_all();
      return pair.status();
    }
    ctl = std::move(pair).value();
  }
  if (!l.stdin_line.empty()) {
    // One short line fits the pipe's buffer: this never blocks.
    const std::string line = l.stdin_line + "\n";
    if (line.size() > 4096 || ::write(inp[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      close_all();
      return Status::IOError("cannot write the command's stdin line");
    }
  }
  // Everything the child needs is built before fork.
  const CStringArray argv(l.argv);
  const CStringArray envp(l.env);

  pid_t parent = ::getpid();
  pid_t pid = ForkWithSignalsBlocked();
  if (pid < 0) {
    const int saved = errno;
    close_all();
    return Status::IOError(fmt::format("fork: {}", std::strerror(saved)));
  }
  if (pid == 0)
    ExecChild(l, argv.data(), envp.data(), l.cpus.empty() ? nullptr : &cpus, inp[0], outp[1], errp[1],
              ctl.second.get(), parent);
  ::setpgid(pid, pid);  // also here: no race with an early SignalGroup
  for (int fd : {inp[0], outp[1], errp[1]})
    if (fd >= 0) ::close(fd);
  auto w = std::unique_ptr<WorkerProcess>(new WorkerProcess());
  w->pid_ = pid;
  w->out_lines_ = OutputLines(!l.raw_lines);
  w->err_lines_ = OutputLines(!l.raw_lines);
  w->in_.Reset(inp[1]);
  w->out_.Reset(outp[0]);
  w->err_.Reset(errp[0]);
  w->ctl_ = std::move(ctl.first);  // the worker's end closes here with `ctl.second`
  for (int fd : {outp[0], errp[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return w;
}

std::unique_ptr<WorkerProcess> WorkerProcess::Adopt(pid_t pid, UniqueFd out, UniqueFd err) {
  auto w = std::unique_ptr<WorkerProcess>(new WorkerProcess());
  w->pid_ = pid;
  w->out_ = std::move(out);
  w->err_ = std::move(err);
  for (int fd : {w->out_.get(), w->err_.get()}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return w;
}

WorkerProcess::~WorkerProcess() {
  if (!exited) SignalGroup(SIGKILL);
}

void WorkerProcess::SignalGroup(int sig) {
  if (pid_ > 0) ::kill(-pid_, sig);
}

void WorkerProcess::ReadPipe(int fd, const LineSink& sink, size_t max_bytes) {
  const bool is_out = fd == out_.get();
  OutputLines& lines = is_out ? out_lines_ : err_lines_;
  const int stream = is_out ? 1 : 2;
  const OutputLines::Sink emit = [&](const std::string& text, bool progress) {
    sink(progress ? stream | msg::kOutputProgress : stream, text);
  };
  char chunk[16384];
  size_t total = 0;
  while (total < max_bytes) {
    ssize_t r = ::read(fd, chunk, std::min(sizeof(chunk), max_bytes - total));
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      total += static_cast<size_t>(r);
      lines.Append(std::string_view(chunk, static_cast<size_t>(r)), emit);
      continue;
    }
    // EOF, or an error: on a pseudo-terminal's master EIO once every holder
    // of the slave closed it (what it wrote before is read first).
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      lines.Finish(emit);
      (is_out ? out_ : err_).Reset();
    }
    return;
  }
}

void WorkerProcess::DrainAndClose(const LineSink& sink) {
  if (out_.get() >= 0) ReadPipe(out_.get(), sink, kPipeDrainLimit);
  if (err_.get() >= 0) ReadPipe(err_.get(), sink, kPipeDrainLimit);
  out_lines_.Finish([&](const std::string& text, bool) { sink(1, text); });
  err_lines_.Finish([&](const std::string& text, bool) { sink(2, text); });
  out_.Reset();
  err_.Reset();
}

}  // namespace ds
