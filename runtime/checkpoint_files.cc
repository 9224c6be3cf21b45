#include "runtime/checkpoint_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace ds::rt {
namespace fs = std::filesystem;
namespace {

std::string Errno() { return std::strerror(errno); }

Status NotOurs(const std::string& what, const std::string& path, uid_t owner,
               const char* refusal) {
  return Status::PermissionDenied(fmt::format("{} {} is owned by uid {}, not by this user (uid {}): {}",
                                              what, path, owner, ::geteuid(), refusal));
}

// `st` (of `path`) must be a directory owned by this user.
Status CheckDirStat(const std::string& what, const std::string& path, const struct stat& st) {
  if (S_ISLNK(st.st_mode))
    return Status::PermissionDenied(
        fmt::format("{} {} is a symbolic link: refusing to use it", what, path));
  if (!S_ISDIR(st.st_mode))
    return Status::PermissionDenied(fmt::format("{} {} is not a directory", what, path));
  if (st.st_uid != ::geteuid()) return NotOurs(what, path, st.st_uid, "refusing to use it");
  return Status::OK();
}

// A leftover `tmp` of an interrupted write is removed only when it is a
// regular file of ours; unlink() never follows a symlink, so a swap between
// the lstat and the unlink cannot redirect it.
}  // namespace

Status CheckCheckpointDir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return errno == ENOENT
               ? Status::NotFound(fmt::format("checkpoint directory {} does not exist", dir))
               : Status::IOError(fmt::format("checkpoint directory {}: {}", dir, Errno()));
  return CheckDirStat("checkpoint directory", dir, st);
}

Status CheckStepDir(const std::string& step_dir) {
  struct stat st;
  if (::lstat(step_dir.c_str(), &st) != 0)
    return Status::IOError(fmt::format("checkpoint step directory {}: {}", step_dir, Errno()));
  return CheckDirStat("checkpoint step directory", step_dir, st);
}

Status MakeCheckpointDir(const std::string& dir) {
  Status st = CheckCheckpointDir(dir);
  if (st.code() != Status::Code::kNotFound) return st;
  // Parents get the usual mode; the checkpoint directory itself is private.
  const fs::path parent = fs::path(dir).lexically_normal().parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec || (::mkdir(dir.c_str(), kCheckpointDirMode) != 0 && errno != EEXIST))
    return Status::IOError(fmt::format("cannot create checkpoint directory {}: {}", dir,
                                       ec ? ec.message() : Errno()));
  return CheckCheckpointDir(dir);  // another rank may have made it first: still ours?
}

Status MakeStepDir(const std::string& step_dir) {
  if (::mkdir(step_dir.c_str(), kCheckpointDirMode) != 0 && errno != EEXIST)
    return Status::IOError(
        fmt::format("cannot create checkpoint step directory {}: {}", step_dir, Errno()));
  return CheckStepDir(step_dir);
}

Result<std::string> ReadCheckpointFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("{}: missing", path));
    if (errno == ELOOP) return Status::IOError(fmt::format("{} is a symbolic link", path));
    return Status::IOError(fmt::format("{}: {}", path, Errno()));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IOError(fmt::format("{} is not a regular file", path));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status err = Status::IOError(fmt::format("{}: read: {}", path, Errno()));
      ::close(fd);
      return err;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace ds::rt
