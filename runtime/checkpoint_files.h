// The filesystem half of checkpoints, safe where another local user can
// write: dstrain often runs as root, and a checkpoint directory may sit in a
// shared place. Directories are created 0700 and must be owned by this
// process's effective user; files are created 0640 under a temporary name
// with O_EXCL|O_NOFOLLOW, so a planted symlink or file is never written
// through, and a failed write leaves no temporary file. Stateless functions,
// safe to call from any thread; errors name the path and the reason.
#pragma once

#include <string>

#include "common/status.h"

namespace ds::rt {

inline constexpr unsigned kCheckpointDirMode = 0700;   // checkpoint and step_ directories
inline constexpr unsigned kCheckpointFileMode = 0640;  // shards and manifests

// Creates `dir` (and missing parents) with mode 0700, or accepts an existing
// directory owned by this user. PermissionDenied when it is owned by
// another user: "checkpoint directory <dir> is owned by uid U, not by this
// user (uid V): refusing to use it"; IOError when it cannot be created.
Status MakeCheckpointDir(const std::string& dir);

// Creates the step directory `step_dir` (its parent exists) with mode 0700,
// or accepts an existing one that is a real directory (not a symlink) owned
// by this user; otherwise PermissionDenied naming it.
Status MakeStepDir(const std::string& step_dir);

// OK when `dir` (followed if a symlink) is a directory owned by this user;
// NotFound when it does not exist; PermissionDenied otherwise, as above.
Status CheckCheckpointDir(const std::string& dir);

// OK when `step_dir` is a real directory (not a symlink) owned by this user.
Status CheckStepDir(const std::string& step_dir);

// Shards and manifests are written with WriteFileDurably (common/files.h),
// mode kCheckpointFileMode.

// The bytes of `path`, which must be a regular file (not a symlink);
// NotFound when it does not exist, IOError otherwise.
Result<std::string> ReadCheckpointFile(const std::string& path);

}  // namespace ds::rt
