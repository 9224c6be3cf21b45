#include "launcher/failover/embedded_etcd.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/subprocess.h"
#include "common/unique_fd.h"
#include "launcher/failover/job_ca.h"

namespace ds::failover {
namespace {

constexpr size_t kLastLines = 20;
// What etcd says once it serves clients (3.4: after its ReadyNotify; with
// --logger zap the first line is not always written, the second is).
constexpr const char* kReadyLines[] = {"ready to serve client requests", "serving client traffic securely"};

std::string Errno() { return std::strerror(errno); }

Status Check(const EmbeddedEtcdOptions& o) {
  const std::string who = fmt::format("etcd member '{}'", o.name);
  if (o.name.empty()) return Status::InvalidArgument("etcd member: no name given");
  if (o.data_dir.empty()) return Status::InvalidArgument(who + ": no data directory given");
  if (o.client_port <= 0 || o.client_port > 65535 || o.peer_port <= 0 || o.peer_port > 65535)
    return Status::InvalidArgument(fmt::format("{}: ports {} and {}: expected 1-65535", who, o.client_port, o.peer_port));
  for (const std::string* f : {&o.ca_file, &o.cert_file, &o.key_file})
    if (f->empty()) return Status::InvalidArgument(who + ": TLS needs the CA, its certificate and its key");
  return Status::OK();
}

// The log file, appended to: never through a symlink, and ours.
Result<UniqueFd> OpenLog(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Status::IOError(fmt::format("etcd log {}: {}", path, Errno()));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return Status::PermissionDenied(fmt::format("etcd log {}: expected a regular file of yours", path));
  return fd;
}

// In the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void ExecEtcd(char* const* argv, int out, int err_pipe, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(137);  // the parent died before prctl
  const int in = ::open("/dev/null", O_RDONLY);
  if (in >= 0) ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(out, 2);
  CloseOnExecAboveStderr({err_pipe});
  ::fcntl(err_pipe, F_SETFD, FD_CLOEXEC);  // closed by a successful exec: the parent reads EOF
  ResetSignalsInChild();
  ::execvp(argv[0], argv);
  const int e = errno;
  (void)!::write(err_pipe, &e, sizeof(e));
  ::_exit(127);
}

}  // namespace

// etcd's output: copied to the log, its last lines kept, readiness seen.
struct EmbeddedEtcd::Output {
  UniqueFd pipe, log;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> last;
  bool ready = false, ended = false;
  std::thread reader;

  void Run() {
    std::string partial;
    char buf[8192];
    for (;;) {
      const ssize_t n = ::read(pipe.get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      (void)!::write(log.get(), buf, static_cast<size_t>(n));
      partial.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = partial.find('\n')) != std::string::npos) {
        Line(partial.substr(0, nl));
        partial.erase(0, nl + 1);
      }
    }
    if (!partial.empty()) Line(partial);
    std::lock_guard<std::mutex> lock(mu);
    ended = true;
    cv.notify_all();
  }
  void Line(std::string line) {
    std::lock_guard<std::mutex> lock(mu);
    for (const char* r : kReadyLines)
      if (line.find(r) != std::string::npos) ready = true;
    if (line.size() > 300) line.resize(300);
    last.push_back(std::move(line));
    if (last.size() > kLastLines) last.pop_front();
    cv.notify_all();
  }
};

std::string ClientUrl(const EmbeddedEtcdOptions& o) {
  const bool v6 = o.ip.find(':') != std::string::npos;
  return fmt::format("https://{}{}{}:{}", v6 ? "[" : "", o.ip, v6 ? "]" : "", o.client_port);
}

std::string PeerUrl(const EmbeddedEtcdOptions& o) {
  const bool v6 = o.ip.find(':') != std::string::npos;
  return fmt::format("https://{}{}{}:{}", v6 ? "[" : "", o.ip, v6 ? "]" : "", o.peer_port);
}

std::vector<std::string> EtcdArgv(const EmbeddedEtcdOptions& o) {
  std::vector<std::string> a = {
      o.program, "--name", o.name, "--data-dir", o.data_dir,
      "--listen-client-urls", ClientUrl(o), "--advertise-client-urls", ClientUrl(o),
      "--listen-peer-urls", PeerUrl(o), "--initial-advertise-peer-urls", PeerUrl(o),
      "--initial-cluster", o.initial_cluster.empty() ? o.name + "=" + PeerUrl(o) : o.initial_cluster,
      "--initial-cluster-state", o.join_existing ? "existing" : "new",
      "--client-cert-auth", "--trusted-ca-file", o.ca_file, "--cert-file", o.cert_file, "--key-file", o.key_file,
      "--peer-client-cert-auth", "--peer-trusted-ca-file", o.ca_file,
      "--peer-cert-file", o.cert_file, "--peer-key-file", o.key_file,
      // A peer is who the job's CA says it is: etcd would also want the
      // address it dials from among its certificate's IPs, which is not so
      // on a host with several addresses (the kernel picks the source) nor
      // on loopback hosts (127.0.0.2 dials from 127.0.0.1): the members
      // that could not reach each other never formed when one of them led.
      "--experimental-peer-skip-client-san-verification",
      "--logger", "zap", "--log-outputs", "stderr",
      // A member back from a partition would depose the raft leader with
      // the terms it ran up alone: an election in which no keepalive of the
      // job's leader is answered. Pre-vote (etcd 3.5's default) lets it
      // rejoin quietly.
      "--pre-vote"};
  if (!o.cluster_token.empty()) a.insert(a.end(), {"--initial-cluster-token", o.cluster_token});
  if (o.heartbeat_ms > 0) a.insert(a.end(), {"--heartbeat-interval", std::to_string(o.heartbeat_ms)});
  if (o.election_ms > 0) a.insert(a.end(), {"--election-timeout", std::to_string(o.election_ms)});
  return a;
}

Result<std::unique_ptr<EmbeddedEtcd>> EmbeddedEtcd::Start(const EmbeddedEtcdOptions& o) {
  DS_RETURN_IF_ERROR(Check(o));
  const std::string who = fmt::format("etcd member '{}'", o.name);
  DS_ASSIGN_OR_RETURN(Dir data, MakePrivateDir(o.data_dir, "etcd data directory"));
  auto out = std::make_unique<Output>();
  DS_ASSIGN_OR_RETURN(out->log, OpenLog(o.log_file.empty() ? o.data_dir + ".log" : o.log_file));
  int fds[2], errs[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::IOError(who + ": pipe: " + Errno());
  out->pipe = UniqueFd(fds[0]);
  UniqueFd write_end(fds[1]);
  if (::pipe2(errs, O_CLOEXEC) != 0) return Status::IOError(who + ": pipe: " + Errno());
  UniqueFd err_read(errs[0]), err_write(errs[1]);
  CStringArray argv(EtcdArgv(o));
  const pid_t parent = ::getpid();
  const pid_t pid = ForkWithSignalsBlocked();
  if (pid < 0) return Status::IOError(who + ": fork: " + Errno());
  if (pid == 0) ExecEtcd(argv.data(), write_end.get(), err_write.get(), parent);
  ::setpgid(pid, pid);  // also here, so that a signal to the group never misses it
  write_end.Reset();
  err_write.Reset();
  int exec_errno = 0;
  ssize_t n;
  while ((n = ::read(err_read.get(), &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR) {
  }
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    return Status::IOError(fmt::format("{}: cannot run '{}': {} (install Debian's etcd-server)", who, o.program,
                                       std::strerror(exec_errno)));
  }
  Output* raw = out.get();
  out->reader = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<EmbeddedEtcd>(new EmbeddedEtcd(o, pid, std::move(out)));
}

EmbeddedEtcd::EmbeddedEtcd(EmbeddedEtcdOptions o, pid_t pid, std::unique_ptr<Output> out)
    : options_(std::move(o)), pid_(pid), out_(std::move(out)) {}

EmbeddedEtcd::~EmbeddedEtcd() { Stop(5); }

std::string EmbeddedEtcd::LastLines() const {
  std::lock_guard<std::mutex> lock(out_->mu);
  std::string text;
  for (const std::string& l : out_->last) text += "\n  " + l;
  return text;
}

bool EmbeddedEtcd::running() const {
  std::lock_guard<std::mutex> lock(out_->mu);
  return !reaped_ && !out_->ended;
}

Status EmbeddedEtcd::WaitReady(double timeout_s, const std::function<bool()>& stop) {
  using Steady = std::chrono::steady_clock;
  const auto until = Steady::now() + Seconds(timeout_s);
  bool ready = false, ended = false, stopped = false;
  while (!ready && !ended && !stopped && Steady::now() < until) {
    {
      std::unique_lock<std::mutex> lock(out_->mu);
      out_->cv.wait_until(lock, std::min(until, Steady::now() + std::chrono::milliseconds(100)),
                          [&] { return out_->ready || out_->ended; });
      ready = out_->ready, ended = out_->ended;
    }
    stopped = !ready && !ended && stop && stop();
  }
  if (ready) return Status::OK();
  const std::string who = fmt::format("etcd member '{}' ({})", options_.name, ClientUrl(options_));
  if (ended) return Status::Unavailable(fmt::format("{}: exited before serving clients; its last lines:{}", who, LastLines()));
  if (stopped) return Status::Aborted(who + ": stopped before it served clients");
  return Status::Timeout(fmt::format("{}: not serving clients within {} s; its last lines:{}", who, timeout_s, LastLines()));
}

void EmbeddedEtcd::Stop(double grace_s) {
  if (reaped_) return;
  ::kill(-pid_, SIGTERM);
  std::unique_lock<std::mutex> lock(out_->mu);
  const bool ended = out_->cv.wait_for(lock, std::chrono::duration<double>(grace_s), [&] { return out_->ended; });
  lock.unlock();
  (void)ended;  // ended or not, Reap sends the group SIGKILL before it waits
  Reap();
}

void EmbeddedEtcd::Kill() {
  if (reaped_) return;
  Reap();
}

void EmbeddedEtcd::Reap() {
  // The group's leader is not reaped yet, so its id is still ours: end
  // anything left in the group, then reap.
  ::kill(-pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (out_->reader.joinable()) out_->reader.join();
  reaped_ = true;
}

}  // namespace ds::failover
