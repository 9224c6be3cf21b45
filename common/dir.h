// Dir: a directory of this user, held open by descriptor, and everything in
// it reached relative to that descriptor (openat, mkdirat, renameat,
// unlinkat), never by resolving its path again. How checkpoint and snapshot
// directories are used where another local user may create entries
// (dstrain's checkpoint directory, the agent's node directory and memory
// directory): a directory is accepted only when its last component is a
// real directory (opened O_NOFOLLOW: a planted symlink is never followed)
// owned by this process's effective user; inside it no symlink is followed
// either (files are opened O_NOFOLLOW, a removal unlinks a symlink rather
// than entering it), and files read must be this user's too.
//
// The components above the opened directory are resolved as usual (a
// symlinked /scratch keeps working), so whoever may rename entries of a
// parent can still swap the whole directory for another of ours before it
// is opened; once open, a Dir keeps meaning the directory it checked.
// The path is kept for messages only. Move-only; the methods only read the
// descriptor, so one Dir may serve several threads.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace ds {

class Dir {
 public:
  // Opens the existing directory `path`. Errors name `what` and the path and
  // say what was expected: NotFound "<what> <path> does not exist";
  // PermissionDenied "<what> <path> is a symlink; expected a directory owned
  // by uid N" (likewise "is not a directory", "is owned by uid M"); IOError
  // with the system's reason otherwise.
  static Result<Dir> Open(const std::string& path, const std::string& what);
  // The same, first creating `path` with `mode` (less the umask) when it is
  // absent, and its missing parents with the usual 0777 less the umask.
  // IOError "cannot create <what> <path>: <reason>".
  static Result<Dir> Make(const std::string& path, const std::string& what, unsigned mode);

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }  // for *at() calls the methods here do not cover
  std::string PathOf(const std::string& name) const { return path_ + "/" + name; }

  // The subdirectory `name` (one component), checked and reported as Open
  // and Make do, with the path <path>/<name>.
  Result<Dir> OpenDir(const std::string& name, const std::string& what) const;
  Result<Dir> MakeDir(const std::string& name, const std::string& what, unsigned mode) const;

  // The names of the entries, sorted, without "." and "..".
  Result<std::vector<std::string>> List() const;
  // What `name` itself is (not followed); nullopt when there is nothing.
  std::optional<struct stat> Lstat(const std::string& name) const;

  // The regular file `name` of this user, open for reading. NotFound
  // "<path>/<name>: missing"; IOError "<path>/<name> is a symlink", "... is
  // not a regular file", "... is owned by uid M; expected a file owned by
  // uid N", or the system's reason.
  Result<UniqueFd> OpenFile(const std::string& name) const;
  // Its bytes, as OpenFile opens it.
  Result<std::string> ReadFile(const std::string& name) const;

  // Durable writes of `name` here, with WriteFileDurably's guarantees
  // (common/files.h): a temporary name, O_EXCL|O_NOFOLLOW, fsync, rename.
  Status WriteFile(const std::string& name, const std::string& data, unsigned mode) const;
  Status CopyFile(const std::string& name, int src_fd, uint64_t bytes, unsigned mode) const;

  // Moves `from_name` of `from` to `name` here, replacing what is there
  // (renameat); IOError naming both.
  Status MoveFrom(const Dir& from, const std::string& from_name, const std::string& name) const;
  // Removes the entry `name` when it is not a directory; OK when absent.
  Status Unlink(const std::string& name) const;
  // Removes `name` and, when it is a directory, everything in it: a
  // directory is entered only as OpenDir opens one (a directory of another
  // user is left, PermissionDenied naming it), a symlink is unlinked, never
  // followed. OK when absent; the first error stops it.
  Status RemoveTree(const std::string& name) const;
  // Removes everything in this directory, as RemoveTree does.
  Status RemoveContents() const;

 private:
  Dir(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  // The directory `name` of `at` (AT_FDCWD for a path), opened and checked.
  static Result<Dir> OpenChecked(int at, const std::string& name, const std::string& path, const std::string& what);

  UniqueFd fd_;
  std::string path_;
};

}  // namespace ds
