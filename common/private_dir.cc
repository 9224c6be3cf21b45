#include "common/private_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/env_registry.h"

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

Result<PrivateDir> OpenPrivateDir() {
  if (auto xdg = GetAnyEnv("XDG_RUNTIME_DIR"); xdg && !xdg->empty()) {
    // The base itself must be this user's too (the XDG spec makes it 0700).
    UniqueFd base(::open(xdg->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (base.get() < 0)
      return Status::InvalidArgument(fmt::format("XDG_RUNTIME_DIR={}: {}", *xdg, std::strerror(errno)));
    DS_RETURN_IF_ERROR(Judge(base.get(), "XDG_RUNTIME_DIR=" + *xdg, *xdg));
    return OpenPrivateDirIn(*xdg, "dslaunch");
  }
  return OpenPrivateDirIn("/tmp", fmt::format("dslaunch-{}", ::geteuid()));
}

}  // namespace ds
