#include "agent/warm/spare.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "agent/warm/shim.h"
#include "agent/workers/child_start.h"
#include "common/files.h"
#include "common/subprocess.h"

namespace ds {
namespace {

// The assignment as the shim reads it (warm_spare.h).
std::string Payload(const WorkerLaunch& l, const std::vector<std::string>& target) {
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, 0);  // a cold worker's: the agent's own
  std::string cpus;
  for (int c : l.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  std::string p = fmt::format("{}", errno == 0 ? nice : 0);
  for (const std::string& f : {l.working_dir, cpus, std::to_string(target.size())}) p += '\0' + f;
  for (const std::string& a : target) p += '\0' + a;
  for (const auto& [k, v] : l.env) p += '\0' + k + '=' + v;
  const uint32_t n = static_cast<uint32_t>(p.size());
  const char len[4] = {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16),
                       static_cast<char>(n >> 24)};
  return std::string(len, 4) + p;
}

// Sends `bytes` on `sock` with `fds` on the first byte; blocking, bounded by SO_SNDTIMEO.
Status SendWithFds(int sock, const std::string& bytes, const int (&fds)[3]) {
  timeval tv{2, 0};
  ::setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  char control[CMSG_SPACE(sizeof(fds))] = {};
  size_t sent = 0;
  while (sent < bytes.size()) {
    iovec iov{const_cast<char*>(bytes.data()) + sent, bytes.size() - sent};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (sent == 0) {
      m.msg_control = control;
      m.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(fds));
      std::memcpy(CMSG_DATA(c), fds, sizeof(fds));
    }
    ssize_t r = ::sendmsg(sock, &m, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::IOError(std::strerror(r < 0 ? errno : EPIPE));
    sent += static_cast<size_t>(r);
  }
  return Status::OK();
}

// Whether `pid` is exiting: its leader a zombie while its other threads
// still die (it is not waitable yet, and its socket may still be open).
bool Exiting(pid_t pid) {
  auto stat = ReadTextFile(fmt::format("/proc/{}/stat", pid), "process status");
  if (!stat.ok()) return true;
  const size_t paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() || (*stat)[paren + 2] == 'Z' ||
         (*stat)[paren + 2] == 'X';
}

}  // namespace

Result<std::unique_ptr<WarmSpare>> WarmSpare::Start(const SpareStart& start, const std::string& first,
                                                    const std::vector<std::string>& preload, bool low_priority) {
  if (start.interpreter.empty()) return Status::InvalidArgument("no interpreter");
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : start.cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &cpus);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::IOError(fmt::format("socketpair: {}", std::strerror(errno)));
  UniqueFd mine(sv[0]), theirs(sv[1]);
  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (devnull.get() < 0) return Status::IOError(fmt::format("/dev/null: {}", std::strerror(errno)));
  std::vector<std::string> args = start.interpreter;
  for (std::string a : {std::string("-c"), std::string(kWarmShim), std::to_string(theirs.get()), first})
    args.push_back(std::move(a));
  args.insert(args.end(), preload.begin(), preload.end());
  const CStringArray argv(args);
  // The preload is imported without the generation's own variables (RANK,
  // MASTER_PORT, ...): they would be stale by the time the spare runs, and
  // the old MASTER_PORT is free for anyone to bind. The assignment brings them.
  KeyValues env;
  for (const auto& kv : start.env)
    if (!VariesPerGeneration(kv.first)) env.push_back(kv);
  const CStringArray envp(env);
  ChildStart child;  // as a cold worker's child starts, with /dev/null for its output until the hand-off
  child.argv = argv.data();
  child.envp = envp.data();
  child.stdin_fd = child.stdout_fd = child.stderr_fd = devnull.get();
  child.keep_fd = theirs.get();
  child.cpus = start.cpus.empty() ? nullptr : &cpus;
  child.low_priority = low_priority;
  child.working_dir = start.working_dir.c_str();
  DS_ASSIGN_OR_RETURN(const pid_t pid, StartChild(child));
  auto s = std::unique_ptr<WarmSpare>(new WarmSpare());
  s->pid_ = pid;
  s->ctl_ = std::move(mine);
  s->start_ = start;
  return s;
}

WarmSpare::~WarmSpare() {
  if (state_ == SpareState::kHandedOff || state_ == SpareState::kEnded) return;
  Kill();
}

void WarmSpare::Kill() {
  ::kill(-pid_, SIGKILL);
  // SIGKILLed, it ends at once: reaped here, so no spare outlives its
  // object and the agent's reaper never sees a pid it no longer knows.
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  state_ = SpareState::kEnded;
  ctl_.Reset();
}

void WarmSpare::OnReadable() {
  char buf[512];
  ssize_t r = ::recv(ctl_.get(), buf, sizeof(buf), MSG_DONTWAIT);
  if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (r <= 0) {
    state_ = SpareState::kFailed;
    why_ = "it ended while importing";
    return;
  }
  report_.append(buf, static_cast<size_t>(r));
  const size_t nl = report_.find('\n');
  if (nl == std::string::npos) {
    if (report_.size() > 4096) report_.clear();
    return;
  }
  const std::string line = report_.substr(0, nl);
  unsigned long long kib = 0;
  double seconds = 0;
  if (std::sscanf(line.c_str(), "ready %llu %lf", &kib, &seconds) == 2) {
    state_ = SpareState::kReady;
    rss_kib_ = kib;
    import_seconds_ = seconds;
  } else {
    state_ = SpareState::kFailed;
    why_ = line.starts_with("failed ") ? line.substr(7) : "it reported '" + line + "'";
  }
}

void WarmSpare::OnExited(int status) {
  if (state_ == SpareState::kHandedOff) return;
  if (state_ != SpareState::kFailed)
    why_ = WIFSIGNALED(status) ? fmt::format("it was killed by signal {} while waiting", WTERMSIG(status))
                               : fmt::format("it exited with code {} while waiting", WEXITSTATUS(status));
  state_ = SpareState::kEnded;
  ctl_.Reset();
}

Result<std::unique_ptr<WorkerProcess>> WarmSpare::HandOff(const WorkerLaunch& launch,
                                                          const std::vector<std::string>& target) {
  int outp[2] = {-1, -1}, errp[2] = {-1, -1};
  Status opened = WorkerProcess::OpenOutput(launch, outp);  // pipes, or terminals with --pty
  if (opened.ok()) opened = WorkerProcess::OpenOutput(launch, errp);
  if (!opened.ok()) {
    for (int fd : {outp[0], outp[1]})
      if (fd >= 0) ::close(fd);
    Kill();
    return opened;
  }
  UniqueFd out_r(outp[0]), out_w(outp[1]), err_r(errp[0]), err_w(errp[1]);
  // A ready spare writes nothing more: readable or hung up, it is gone
  // (killed, not yet reaped).
  pollfd p{ctl_.get(), POLLIN, 0};
  if (::poll(&p, 1, 0) != 0 || Exiting(pid_)) {
    Kill();
    why_ = "it ended while waiting";
    return Status::IOError(why_);
  }
  UniqueFd in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int fds[3] = {in.get(), out_w.get(), err_w.get()};
  Status st = in.get() < 0 ? Status::IOError("/dev/null") : SendWithFds(ctl_.get(), Payload(launch, target), fds);
  if (!st.ok()) {
    Kill();
    return Status::IOError("the assignment could not be sent: " + st.message());
  }
  state_ = SpareState::kHandedOff;
  ctl_.Reset();  // EOF for a shim still reading: it has all it needs
  return WorkerProcess::Adopt(pid_, std::move(out_r), std::move(err_r));
}

}  // namespace ds
