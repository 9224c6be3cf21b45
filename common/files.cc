#include "common/files.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/strings.h"
#include "common/unique_fd.h"

namespace ds {

namespace {

// Opens `path` for reading without waiting: O_NONBLOCK, so that a FIFO with
// no writer cannot hang open() (a named one is refused; the pipe behind
// /dev/fd/N, whose writer is the shell, is read blocking as before).
// `follow` false adds O_NOFOLLOW. `st` is the opened file's.
Result<UniqueFd> OpenForReading(const std::string& path, const std::string& name, bool follow, struct stat* st) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW)));
  if (fd.get() < 0) {
    std::string reason = std::strerror(errno);
    if (errno == ENOENT) return Status::NotFound(name + ": " + reason);
    if (errno == ELOOP && !follow) return Status::InvalidArgument(name + ": is a symbolic link: refusing to follow it");
    return Status::IOError(name + ": " + reason);
  }
  if (::fstat(fd.get(), st) != 0) return Status::IOError(name + ": " + std::strerror(errno));
  if (S_ISDIR(st->st_mode)) return Status::InvalidArgument(name + ": is a directory");
  struct stat link;
  if (S_ISFIFO(st->st_mode) && ::lstat(path.c_str(), &link) == 0 && S_ISFIFO(link.st_mode))
    return Status::InvalidArgument(name + ": is a named pipe (FIFO): refusing to wait for a writer; give a regular file");
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

// Reads the open file `fd` (shown as `name`), at most `max_bytes`.
Result<std::string> ReadOpenFile(int fd, const struct stat& st, const std::string& name, const std::string& what,
                                 size_t max_bytes) {
  auto too_big = [&] {
    return Status::InvalidArgument(fmt::format("{}: is larger than {} MiB, the most a {} may be", name,
                                               max_bytes >> 20, what));
  };
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) return too_big();
  std::string text;
  char buf[65536];
  for (;;) {  // a pipe, or a file that grows while read, is bounded too
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(name + ": " + std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + static_cast<size_t>(n) > max_bytes) return too_big();
    text.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Result<std::string> ReadTextFile(const std::string& path, const std::string& what, size_t max_bytes) {
  const std::string name = what + " " + path;
  struct stat st;
  DS_ASSIGN_OR_RETURN(UniqueFd fd, OpenForReading(path, name, /*follow=*/true, &st));
  return ReadOpenFile(fd.get(), st, name, what, max_bytes);
}

Result<std::string> ReadTrustedTextFile(const std::string& path, const std::string& what) {
  const std::string name = what + " " + path;
  struct stat st;
  DS_ASSIGN_OR_RETURN(UniqueFd fd, OpenForReading(path, name, /*follow=*/false, &st));
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(name + ": is not a regular file: refusing to read it");
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return Status::InvalidArgument(fmt::format("{}: is owned by uid {}, not by you (uid {}) or root: refusing to "
                                                "read it", name, st.st_uid, ::geteuid()));
  if (st.st_mode & 022)
    return Status::InvalidArgument(fmt::format("{}: mode {:o} lets {} change it: refusing to read it; chmod go-w it",
                                                name, st.st_mode & 0777,
                                                (st.st_mode & 020) && (st.st_mode & 002) ? "its group and others"
                                                : (st.st_mode & 020)                    ? "its group"
                                                                                        : "others"));
  return ReadOpenFile(fd.get(), st, name, what, kMaxTextFile);
}

Result<std::string> ReadPrivateLine(const std::string& path, const std::string& name, SecretDir dir) {
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  UniqueFd dfd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (dir == SecretDir::kPrivate ? O_NOFOLLOW : 0)));
  struct stat st;
  if (dfd.get() < 0 || ::fstat(dfd.get(), &st) != 0) return Status::InvalidArgument(name + ": not a readable file");
  if (dir == SecretDir::kPrivate && (st.st_uid != ::geteuid() || (st.st_mode & 077)))
    return Status::PermissionDenied(fmt::format(
        "{}: its directory {} has owner uid {} and mode {:o}; expected a directory of yours with mode 700", name,
        parent, st.st_uid, st.st_mode & 0777));
  UniqueFd fd(::openat(dfd.get(), base.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
  if (fd.get() < 0 && errno == ELOOP)
    return Status::PermissionDenied(name + ": is a symbolic link: refusing to follow it");
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::InvalidArgument(name + ": not a readable file");
  if (st.st_uid != ::geteuid())
    return Status::PermissionDenied(fmt::format("{}: owned by uid {}, not by you", name, st.st_uid));
  if (st.st_mode & 077)
    return Status::PermissionDenied(
        fmt::format("{}: mode {:o} lets others read or change it; chmod 600 it", name, st.st_mode & 0777));
  std::string text(4096, '\0');
  ssize_t n;
  do n = ::read(fd.get(), text.data(), text.size());
  while (n < 0 && errno == EINTR);
  if (n < 0) return Status::IOError(name + ": " + std::strerror(errno));
  text.resize(static_cast<size_t>(n));
  return std::string(Trim(text.substr(0, text.find('\n'))));
}

namespace {

std::string Errno() { return std::strerror(errno); }

// A stale temporary file `name` of `dirfd` (shown as `tmp`) is removed only
// when it is a regular file of ours; unlinkat() never follows a symlink, so a
// swap between the check and the removal cannot redirect it.
// OK when `name` of `dirfd` (shown as `shown`) is absent (*exists false) or
// a regular file of this user; else PermissionDenied saying what it is.
Status CheckOwnFileAt(int dirfd, const std::string& name, const std::string& shown, bool* exists) {
  struct stat st;
  *exists = false;
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? Status::OK() : Status::IOError(fmt::format("{}: {}", shown, Errno()));
  *exists = true;
  if (S_ISLNK(st.st_mode))
    return Status::PermissionDenied(fmt::format("{} is a symbolic link: refusing to write through it", shown));
  if (!S_ISREG(st.st_mode))
    return Status::PermissionDenied(fmt::format("{} is not a regular file: refusing to replace it", shown));
  if (st.st_uid != ::geteuid())
    return Status::PermissionDenied(fmt::format("file {} is owned by uid {}, not by this user (uid {}): refusing to "
                                                "replace it", shown, st.st_uid, ::geteuid()));
  return Status::OK();
}

Status RemoveStaleTemp(int dirfd, const std::string& name, const std::string& tmp) {
  bool exists = false;
  DS_RETURN_IF_ERROR(CheckOwnFileAt(dirfd, name, tmp, &exists));
  if (exists && ::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT)
    return Status::IOError(fmt::format("{}: cannot remove: {}", tmp, Errno()));
  return Status::OK();
}

Status WriteAll(int fd, const std::string& tmp, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(fmt::format("{}: write: {}", tmp, Errno()));
    }
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

// `bytes` of `src_fd` from offset 0 into `fd`, in the kernel (sendfile) where it can.
Status CopyAll(int fd, const std::string& tmp, int src_fd, uint64_t bytes) {
  off_t offset = 0;
  while (static_cast<uint64_t>(offset) < bytes) {
    ssize_t n = ::sendfile(fd, src_fd, &offset, bytes - static_cast<uint64_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EINVAL || errno == ENOSYS)) break;  // not for these files: copy below
    if (n < 0) return Status::IOError(fmt::format("{}: copy: {}", tmp, Errno()));
    if (n == 0) return Status::IOError(fmt::format("{}: the source ended after {} of {} bytes", tmp, offset, bytes));
  }
  char buf[1 << 16];
  while (static_cast<uint64_t>(offset) < bytes) {
    ssize_t n = ::pread(src_fd, buf, std::min<uint64_t>(sizeof(buf), bytes - static_cast<uint64_t>(offset)), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError(fmt::format("{}: reading the source: {}", tmp, n < 0 ? Errno() : "ended early"));
    DS_RETURN_IF_ERROR(WriteAll(fd, tmp, buf, static_cast<size_t>(n)));
    offset += n;
  }
  return Status::OK();
}

// The durable write of `name` in `dirfd` (see WriteFileDurably), shown as
// `path`, its contents written by `fill`.
template <typename Fill>
Status WriteDurablyAt(int dirfd, const std::string& name, const std::string& path, unsigned mode, Fill fill) {
  const std::string tmp_name = name + ".tmp", tmp = path + ".tmp";
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::openat(dirfd, tmp_name.c_str(), flags, mode);
  if (fd < 0 && errno == EEXIST) {
    DS_RETURN_IF_ERROR(RemoveStaleTemp(dirfd, tmp_name, tmp));
    fd = ::openat(dirfd, tmp_name.c_str(), flags, mode);
  }
  if (fd < 0) return Status::IOError(fmt::format("{}: cannot create: {}", tmp, Errno()));
  // From here on `tmp` is the file we created; every failure removes it.
  Status st = fill(fd, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Status::IOError(fmt::format("{}: fsync: {}", tmp, Errno()));
  if (::close(fd) != 0 && st.ok()) st = Status::IOError(fmt::format("{}: close: {}", tmp, Errno()));
  if (st.ok() && ::renameat(dirfd, tmp_name.c_str(), dirfd, name.c_str()) != 0)
    st = Status::IOError(fmt::format("{}: rename: {}", path, Errno()));
  if (!st.ok()) {
    ::unlinkat(dirfd, tmp_name.c_str(), 0);
    return st;
  }
  ::fsync(dirfd);
  return Status::OK();
}

// The same for `path`, relative to its parent directory (followed as usual);
// with `own_only`, an existing `path` must be a regular file of ours.
template <typename Fill>
Status WriteDurably(const std::string& path, unsigned mode, Fill fill, bool own_only = false) {
  const std::filesystem::path p(path);
  const std::string dir = p.parent_path().string();
  UniqueFd dfd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() < 0) return Status::IOError(fmt::format("{}.tmp: cannot create: {}", path, Errno()));
  bool exists = false;
  if (own_only) DS_RETURN_IF_ERROR(CheckOwnFileAt(dfd.get(), p.filename().string(), path, &exists));
  return WriteDurablyAt(dfd.get(), p.filename().string(), path, mode, fill);
}

}  // namespace

Status WriteFileDurably(const std::string& path, const std::string& data, unsigned mode) {
  return WriteDurably(path, mode,
                      [&](int fd, const std::string& tmp) { return WriteAll(fd, tmp, data.data(), data.size()); });
}

Status ReplaceOwnFile(const std::string& path, const std::string& data, unsigned mode) {
  return WriteDurably(
      path, mode, [&](int fd, const std::string& tmp) { return WriteAll(fd, tmp, data.data(), data.size()); },
      /*own_only=*/true);
}

Status CopyFileDurably(int src_fd, uint64_t bytes, const std::string& path, unsigned mode) {
  return WriteDurably(path, mode, [&](int fd, const std::string& tmp) { return CopyAll(fd, tmp, src_fd, bytes); });
}

Status WriteFileDurablyAt(int dirfd, const std::string& name, const std::string& shown, const std::string& data,
                          unsigned mode) {
  return WriteDurablyAt(dirfd, name, shown, mode, [&](int fd, const std::string& tmp) {
    return WriteAll(fd, tmp, data.data(), data.size());
  });
}

Status CopyFileDurablyAt(int dirfd, const std::string& name, const std::string& shown, int src_fd, uint64_t bytes,
                         unsigned mode) {
  return WriteDurablyAt(dirfd, name, shown, mode,
                        [&](int fd, const std::string& tmp) { return CopyAll(fd, tmp, src_fd, bytes); });
}

std::string SiblingBinary(const std::string& name, const std::string& subdir, const std::string& override_path) {
  if (!override_path.empty()) return override_path;
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return name;
  std::filesystem::path dir = self.parent_path();
  if (std::filesystem::exists(dir / name)) return (dir / name).string();
  std::filesystem::path tree = dir.parent_path() / subdir / name;
  if (std::filesystem::exists(tree)) return tree.string();
  return (dir / name).string();
}

}  // namespace ds
