#include "launcher/join/loopback_secret.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/duration.h"
#include "common/strings.h"

namespace ds {
namespace {

std::string Errno() { return std::strerror(errno); }

// The file when a live node 0 holds it (its flock), nullopt when it is
// missing or a dead node 0's; an error when it is not ours alone.
Result<std::optional<std::string>> TryRead(const PrivateDir& dir, const std::string& name) {
  const std::string path = dir.path + "/" + name;
  UniqueFd fd(::openat(dir.fd.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return Status::PermissionDenied(fmt::format("{}: {} (expected a file of yours, mode 600)", path, Errno()));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077))
    return Status::PermissionDenied(fmt::format("{}: expected a regular file of yours, mode 600", path));
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return std::optional<std::string>();  // nobody holds it: stale
  if (errno != EWOULDBLOCK) return Status::IOError(fmt::format("{}: flock: {}", path, Errno()));
  char buf[256];
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n <= 0) return Status::IOError(fmt::format("{}: {}", path, n < 0 ? Errno() : "empty"));
  std::string text(buf, static_cast<size_t>(n));
  return std::optional<std::string>(std::string(Trim(text.substr(0, text.find('\n')))));
}

}  // namespace

std::string LoopbackSecretName(const std::string& endpoint) {
  std::string name = "per-node-" + endpoint + ".secret";
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-')) c = '-';
  return name;
}

LoopbackSecret::LoopbackSecret(PrivateDir dir, std::string name, UniqueFd file)
    : dir_(std::move(dir)), name_(std::move(name)), path_(dir_.path + "/" + name_), file_(std::move(file)) {}

LoopbackSecret::~LoopbackSecret() {
  struct stat mine, there;
  if (::fstat(file_.get(), &mine) == 0 && ::fstatat(dir_.fd.get(), name_.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
      mine.st_ino == there.st_ino && mine.st_dev == there.st_dev)
    ::unlinkat(dir_.fd.get(), name_.c_str(), 0);
}

Result<std::unique_ptr<LoopbackSecret>> LoopbackSecret::Publish(const std::string& endpoint,
                                                                const std::string& secret) {
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  const std::string name = LoopbackSecretName(endpoint);
  DS_ASSIGN_OR_RETURN(auto live, TryRead(dir, name));
  if (live)
    return Status::Aborted(fmt::format("{}: a node 0 of yours for {} is already running (it holds this file)",
                                       dir.path + "/" + name, endpoint));
  const std::string tmp = fmt::format("{}.{}.tmp", name, ::getpid());
  ::unlinkat(dir.fd.get(), tmp.c_str(), 0);  // a dead process of this pid's; the directory is ours alone
  UniqueFd fd(::openat(dir.fd.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Status::IOError(fmt::format("{}/{}: {}", dir.path, tmp, Errno()));
  const std::string line = secret + "\n";
  Status st = ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0 ? Status::OK() : Status::IOError("flock: " + Errno());
  if (st.ok() && ::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    st = Status::IOError("write: " + Errno());
  if (st.ok() && ::renameat(dir.fd.get(), tmp.c_str(), dir.fd.get(), name.c_str()) != 0)
    st = Status::IOError("rename: " + Errno());
  if (!st.ok()) {
    ::unlinkat(dir.fd.get(), tmp.c_str(), 0);
    return st.Prefixed(dir.path + "/" + name);
  }
  return std::unique_ptr<LoopbackSecret>(new LoopbackSecret(std::move(dir), name, std::move(fd)));
}

Result<std::string> AwaitLoopbackSecret(const std::string& endpoint, double timeout_s,
                                        const std::function<void(const std::string&)>& waiting) {
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  const std::string name = LoopbackSecretName(endpoint);
  // Watch before the first look, so that a publication between the two is seen.
  UniqueFd watch(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (watch.get() < 0 ||
      ::inotify_add_watch(watch.get(), dir.path.c_str(), IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE) < 0)
    return Status::IOError(fmt::format("{}: inotify: {}", dir.path, Errno()));
  const auto deadline = std::chrono::steady_clock::now() + Seconds(timeout_s);
  bool told = false;
  for (;;) {
    DS_ASSIGN_OR_RETURN(auto secret, TryRead(dir, name));
    if (secret) return *secret;
    if (!told) waiting(dir.path + "/" + name);
    told = true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{watch.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0)
      return Status::Timeout(fmt::format(
          "no node 0 published the job secret in {} within {}: is node 0 (--node_rank 0) running on this machine "
          "as this user, with the same rendezvous {}?",
          dir.path + "/" + name, FormatDuration(timeout_s), endpoint));
    char events[4096];
    while (::read(watch.get(), events, sizeof(events)) > 0) {
    }
  }
}

}  // namespace ds
