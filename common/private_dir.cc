#include "common/private_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/log.h"

namespace ds {
namespace {

std::string Remedy(const std::string& base) {
  return base == "/tmp" ? "remove it, or set XDG_RUNTIME_DIR to a directory of yours" : "remove it";
}

// Judges the open directory itself: the checks hold for what we use.
Status Judge(int fd, const std::string& path, const std::string& base) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::IOError(fmt::format("{}: {}", path, std::strerror(errno)));
  if (st.st_uid != ::geteuid())
    return Status::PermissionDenied(fmt::format("{} is owned by uid {}, not by you (uid {}): another user made it; {}",
                                                path, st.st_uid, ::geteuid(), Remedy(base)));
  if (st.st_mode & 077)
    return Status::PermissionDenied(
        fmt::format("{} has mode {:o}: expected 700 (nobody else may enter it); chmod 700 it", path, st.st_mode & 0777));
  return Status::OK();
}

}  // namespace

Result<PrivateDir> OpenPrivateDirIn(const std::string& base, const std::string& name) {
  PrivateDir d{base + "/" + name, UniqueFd()};
  if (::mkdir(d.path.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::IOError(fmt::format("cannot make {}: {}", d.path, std::strerror(errno)));
  // Who made it is said before opening it: another user's 0700 directory
  // would otherwise be only "Permission denied" to a user who is not root.
  if (struct stat st; ::lstat(d.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != ::geteuid())
    return Status::PermissionDenied(fmt::format("{} is owned by uid {}, not by you (uid {}): another user made it; {}",
                                                d.path, st.st_uid, ::geteuid(), Remedy(base)));
  d.fd.Reset(::open(d.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (d.fd.get() < 0) {
    const int err = errno;
    struct stat st;
    if (::lstat(d.path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return Status::PermissionDenied(fmt::format("{} is a symbolic link: expected a directory of yours; {}", d.path,
                                                  Remedy(base)));
    if (err == ENOTDIR)
      return Status::PermissionDenied(fmt::format("{} is not a directory; {}", d.path, Remedy(base)));
    return Status::IOError(fmt::format("cannot open {}: {}", d.path, std::strerror(err)));
  }
  DS_RETURN_IF_ERROR(Judge(d.fd.get(), d.path, base));
  return d;
}

namespace {

// A directory of ours (not a link) at `path`.
bool OwnDirectory(const std::string& path) {
  struct stat st;
  return !path.empty() && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

}  // namespace

Result<PrivateDir> OpenPrivateDirFrom(const PrivateDirBases& b) {
  if (!b.xdg.empty()) {
    // The base itself must be this user's too (the XDG spec makes it 0700).
    UniqueFd base(::open(b.xdg.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (base.get() < 0)
      return Status::InvalidArgument(fmt::format("XDG_RUNTIME_DIR={}: {}", b.xdg, std::strerror(errno)));
    DS_RETURN_IF_ERROR(Judge(base.get(), "XDG_RUNTIME_DIR=" + b.xdg, b.xdg));
    return OpenPrivateDirIn(b.xdg, "dslaunch");
  }
  if (OwnDirectory(b.run_user)) return OpenPrivateDirIn(b.run_user, "dslaunch");
  const std::string name = fmt::format("dslaunch-{}", ::geteuid());
  Result<PrivateDir> tmp = OpenPrivateDirIn(b.tmp, name);
  if (tmp.ok() || tmp.status().code() != Status::Code::kPermissionDenied || !OwnDirectory(b.home)) return tmp;
  // Another user made the name first (anyone can, for every uid): our own
  // corner of $HOME instead, said once per process.
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    DS_LOG(Warn, Init) << tmp.status().message() << "; using " << b.home << "/.dslaunch instead";
  return OpenPrivateDirIn(b.home, ".dslaunch");
}

Result<PrivateDir> OpenPrivateDir() {
  PrivateDirBases b;
  b.xdg = GetAnyEnv("XDG_RUNTIME_DIR").value_or("");
  b.run_user = fmt::format("/run/user/{}", ::geteuid());
  b.home = GetAnyEnv("HOME").value_or("");
  return OpenPrivateDirFrom(b);
}

}  // namespace ds
