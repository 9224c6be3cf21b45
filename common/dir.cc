#include "common/dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/files.h"

namespace ds {
namespace {

std::string Errno() { return std::strerror(errno); }

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// An entry name: one component, so nothing is resolved through it.
Status CheckName(const std::string& dir, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return Status::InvalidArgument(fmt::format("'{}' is not a name of an entry of {}", name, dir));
  return Status::OK();
}

Status NotExpected(const std::string& what, const std::string& path, const std::string& found) {
  return Status::PermissionDenied(
      fmt::format("{} {} {}; expected a directory owned by uid {}", what, path, found, ::geteuid()));
}

}  // namespace

Result<Dir> Dir::OpenChecked(int at, const std::string& name, const std::string& path, const std::string& what) {
  UniqueFd fd(::openat(at, name.c_str(), kDirFlags));
  if (fd.get() < 0) {
    const int err = errno;
    struct stat st;
    if (err == ENOENT) return Status::NotFound(fmt::format("{} {} does not exist", what, path));
    if (::fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode)) return NotExpected(what, path, "is a symlink");
      if (!S_ISDIR(st.st_mode)) return NotExpected(what, path, "is not a directory");
    }
    return Status::IOError(fmt::format("{} {}: {}", what, path, std::strerror(err)));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::IOError(fmt::format("{} {}: {}", what, path, Errno()));
  if (st.st_uid != ::geteuid()) return NotExpected(what, path, fmt::format("is owned by uid {}", st.st_uid));
  return Dir(std::move(fd), path);
}

Result<Dir> Dir::Open(const std::string& path, const std::string& what) {
  // "d/", "d/." or "d/x/.." would make the kernel follow a symlink d despite
  // O_NOFOLLOW: name the last component itself.
  std::string p = std::filesystem::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return OpenChecked(AT_FDCWD, p, p, what);
}

Result<Dir> Dir::Make(const std::string& path, const std::string& what, unsigned mode) {
  const std::filesystem::path parent = std::filesystem::path(path).lexically_normal().parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {} {}: {}", what, path, ec.message()));
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    return Status::IOError(fmt::format("cannot create {} {}: {}", what, path, Errno()));
  return Open(path, what);  // made now, or there already (by another rank, or planted): checked either way
}

Result<Dir> Dir::OpenDir(const std::string& name, const std::string& what) const {
  DS_RETURN_IF_ERROR(CheckName(path_, name));
  return OpenChecked(fd_.get(), name, PathOf(name), what);
}

Result<Dir> Dir::MakeDir(const std::string& name, const std::string& what, unsigned mode) const {
  DS_RETURN_IF_ERROR(CheckName(path_, name));
  if (::mkdirat(fd_.get(), name.c_str(), mode) != 0 && errno != EEXIST)
    return Status::IOError(fmt::format("cannot create {} {}: {}", what, PathOf(name), Errno()));
  return OpenChecked(fd_.get(), name, PathOf(name), what);
}

Result<std::vector<std::string>> Dir::List() const {
  // A description of its own: readdir's position is not shared with fd_.
  const int fd = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (!d) {
    Status err = Status::IOError(fmt::format("{}: cannot list: {}", path_, Errno()));
    if (fd >= 0) ::close(fd);
    return err;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<struct stat> Dir::Lstat(const std::string& name) const {
  struct stat st;
  if (!CheckName(path_, name).ok() || ::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return std::nullopt;
  return st;
}

Result<UniqueFd> Dir::OpenFile(const std::string& name) const {
  DS_RETURN_IF_ERROR(CheckName(path_, name));
  const std::string path = PathOf(name);
  // O_NONBLOCK: a FIFO in its place is refused below, not waited on.
  UniqueFd fd(::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("{}: missing", path));
    if (errno == ELOOP) return Status::IOError(fmt::format("{} is a symlink", path));
    return Status::IOError(fmt::format("{}: {}", path, Errno()));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::IOError(fmt::format("{} is not a regular file", path));
  if (st.st_uid != ::geteuid())
    return Status::IOError(
        fmt::format("{} is owned by uid {}; expected a file owned by uid {}", path, st.st_uid, ::geteuid()));
  if (::fcntl(fd.get(), F_SETFL, O_RDONLY) != 0) return Status::IOError(fmt::format("{}: {}", path, Errno()));
  return fd;
}

Result<std::string> Dir::ReadFile(const std::string& name) const {
  DS_ASSIGN_OR_RETURN(UniqueFd fd, OpenFile(name));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(fmt::format("{}: read: {}", PathOf(name), Errno()));
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

Status Dir::WriteFile(const std::string& name, const std::string& data, unsigned mode) const {
  DS_RETURN_IF_ERROR(CheckName(path_, name));
  return WriteFileDurablyAt(fd_.get(), name, PathOf(name), data, mode);
}

Status Dir::CopyFile(const std::string& name, int src_fd, uint64_t bytes, unsigned mode) const {
  DS_RETURN_IF_ERROR(CheckName(path_, name));
  return CopyFileDurablyAt(fd_.get(), name, PathOf(name), src_fd, bytes, mode);
}

Status Dir::MoveFrom(const Dir& from, const std::string& from_name, const std::string& name) const {
  DS_RETURN_IF_ERROR(CheckName(from.path_, from_name));
  DS_RETURN_IF_ERROR(CheckName(path_, name));
  if (::renameat(from.fd_.get(), from_name.c_str(), fd_.get(), name.c_str()) != 0)
    return Status::IOError(fmt::format("cannot move {} to {}: {}", from.PathOf(from_name), PathOf(name), Errno()));
  return Status::OK();
}

Status Dir::Unlink(const std::string& name) const {
  DS_RETURN_IF_ERROR(CheckName(path_, name));
  if (::unlinkat(fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT)
    return Status::IOError(fmt::format("cannot remove {}: {}", PathOf(name), Errno()));
  return Status::OK();
}

Status Dir::RemoveTree(const std::string& name) const {
  const std::optional<struct stat> st = Lstat(name);
  if (!st) return CheckName(path_, name);  // absent: done
  if (S_ISDIR(st->st_mode)) {
    DS_ASSIGN_OR_RETURN(Dir sub, OpenDir(name, "directory"));  // swapped for a symlink meanwhile: refused
    DS_RETURN_IF_ERROR(sub.RemoveContents());
    if (::unlinkat(fd_.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
      return Status::IOError(fmt::format("cannot remove {}: {}", PathOf(name), Errno()));
    return Status::OK();
  }
  return Unlink(name);
}

Status Dir::RemoveContents() const {
  DS_ASSIGN_OR_RETURN(std::vector<std::string> names, List());
  for (const std::string& name : names) DS_RETURN_IF_ERROR(RemoveTree(name));
  return Status::OK();
}

}  // namespace ds
