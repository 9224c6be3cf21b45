// Reading whole files with errors a person can act on. Pure wrappers over
// the filesystem; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ds {

// Returns the bytes of `path`, at most `max_bytes` (a pipe such as <(...)
// too). Errors read "<what> <path>: <reason>", e.g. "hostfile /x/h: No such
// file or directory" (NotFound), "... is a directory" or "... is larger than
// 16 MiB, the most a hostfile may be" (InvalidArgument), or the open/read
// error (IOError).
inline constexpr size_t kMaxTextFile = 16u << 20;
// A named pipe (FIFO) is refused at once ("... is a named pipe (FIFO):
// refusing to wait for a writer; give a regular file"), never waited on.
Result<std::string> ReadTextFile(const std::string& path, const std::string& what, size_t max_bytes = kMaxTextFile);

// The same for a file whose contents are trusted, not only parsed (env
// files: their variables reach every worker, BASH_ENV and LD_PRELOAD too):
// read only when it is a regular file owned by this user or root that
// neither its group nor others may write, judged on the file opened with
// O_NOFOLLOW. Errors (InvalidArgument: bad input) name it and why: "<what> <path>: is
// a symbolic link: refusing to follow it", "... is owned by uid 65534, not
// by you (uid 0) or root: refusing to read it", "... mode 666 lets its group
// and others change it: refusing to read it; chmod go-w it". A missing file
// is NotFound.
Result<std::string> ReadTrustedTextFile(const std::string& path, const std::string& what);

// The first line of `path`, trimmed, when it is a regular file of this user
// that nobody else may read or write (mode 0600 or stricter): how secrets are
// passed in files. Checked on the open file, so the file judged is the file
// read (O_NONBLOCK: a FIFO put there cannot hang the reader). Errors begin
// with `name` (e.g. "DSLAUNCH_SECRET_FILE=/x/s"): "not a readable file"
// (InvalidArgument), "owned by uid N, not by you" or "mode 640 lets others
// read or change it; chmod 600 it" (PermissionDenied). Reads 4 KiB at most.
// A symbolic link is never followed ("is a symbolic link: refusing to follow
// it"). With SecretDir::kPrivate the directory holding it must be a real
// directory of this user's that nobody else may enter (0700): how a token
// that dslaunch itself put in a private directory is read (mpirun's), where
// the same path on another node may be another user's plant.
enum class SecretDir { kAny, kPrivate };
Result<std::string> ReadPrivateLine(const std::string& path, const std::string& name,
                                    SecretDir dir = SecretDir::kAny);

// Writes `data` to `<path>.tmp` (created with `mode`, less the umask;
// O_EXCL|O_NOFOLLOW), fsyncs it, renames it to `path` and fsyncs the
// directory: readers see the old file or the new one, never a part. A stale
// `<path>.tmp` is removed first only when it is a regular file owned by this
// user; anything else there (a symlink, another user's file) is refused with
// PermissionDenied, e.g. "<path>.tmp is a symbolic link: refusing to write
// through it". On any failure the temporary file is removed.
Status WriteFileDurably(const std::string& path, const std::string& data, unsigned mode);
// The same for a file written where others may write too (the working
// directory): an existing `path` must be a regular file of this user's, else
// PermissionDenied ("<path> is a symbolic link: refusing to write through
// it", "file <path> is owned by uid N, not by this user (uid M): refusing to
// replace it"); the rename never follows what is at `path` anyway.
Status ReplaceOwnFile(const std::string& path, const std::string& data, unsigned mode);
// The same with the first `bytes` of the open file `src_fd` as the contents,
// copied in the kernel (sendfile) where it can: the bytes never pass
// through this process's memory.
Status CopyFileDurably(int src_fd, uint64_t bytes, const std::string& path, unsigned mode);
// Both relative to the open directory `dirfd` (what Dir::WriteFile uses):
// `name` is an entry of it, `shown` its path in messages. The path forms
// above open the parent of `path` and call these.
Status WriteFileDurablyAt(int dirfd, const std::string& name, const std::string& shown, const std::string& data,
                          unsigned mode);
Status CopyFileDurablyAt(int dirfd, const std::string& name, const std::string& shown, int src_fd, uint64_t bytes,
                         unsigned mode);

// Path of a program that ships next to the running one: `override_path` if
// set, else <dir of this executable>/<name>, else <dir>/../<subdir>/<name>
// (the build tree: build/launcher/dslaunch -> build/agent/dsagent).
std::string SiblingBinary(const std::string& name, const std::string& subdir, const std::string& override_path = "");

}  // namespace ds
