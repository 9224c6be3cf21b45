#include "agent/workers/worker_process.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "agent/workers/child_start.h"
#include "agent/workers/control_channel.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "wire/protocol.h"

namespace ds {
namespace {

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

  ChildStart child;
  child.argv = argv.data();
  child.envp = envp.data();
  child.stdin_fd = inp[0];
  child.stdout_fd = outp[1];
  child.stderr_fd = errp[1];
  child.control_fd = ctl.second.get();
  child.cpus = l.cpus.empty() ? nullptr : &cpus;
  child.working_dir = l.working_dir.c_str();
  Result<pid_t> started = StartChild(child);
  if (!started.ok()) {
    close_all();
    return started.status();
  }
  const pid_t pid = *started;
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
