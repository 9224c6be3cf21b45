// The filesystem half of checkpoints, safe where another local user can
// write: dstrain often runs as root, and a checkpoint directory may sit in a
// shared place. The checkpoint directory and its step_ directories are
// opened as common/dir.h's Dir: a real directory (its last component opened
// O_NOFOLLOW, never through a symlink) owned by this process's effective
// user, and everything in it is reached relative to the open descriptor, so
// what was checked is what is written, read and pruned. Directories are
// created 0700, files 0640 under a temporary name with O_EXCL|O_NOFOLLOW
// (Dir::WriteFile), so a planted symlink or file is never written through.
// dsagent keeps the node's snapshots by the same rules (agent/snapshots/disk.h).
// Stateless functions, safe from any thread; errors name the path and what
// was expected.
#pragma once

#include <cstdint>
#include <string>

#include "common/dir.h"
#include "common/status.h"

namespace ds::ckpt {

inline constexpr unsigned kCheckpointDirMode = 0700;   // checkpoint and step_ directories
inline constexpr unsigned kCheckpointFileMode = 0640;  // shards and manifests

// "step_<8 digits>": a step directory's name; names sort by step.
std::string StepDirName(int64_t step);

// The checkpoint directory `dir`, created with its missing parents when
// absent. PermissionDenied when it is not a directory of this user:
// "checkpoint directory <dir> is a symlink; expected a directory owned by
// uid N" (or "is owned by uid M", "is not a directory"); IOError when it
// cannot be created.
Result<Dir> MakeCheckpointDir(const std::string& dir);
// The same without creating it: NotFound "checkpoint directory <dir> does
// not exist".
Result<Dir> OpenCheckpointDir(const std::string& dir);

// The step directory `name` of `ckpt`, created when absent, or opened;
// errors as above with "checkpoint step directory <ckpt>/<name>".
Result<Dir> MakeStepDir(const Dir& ckpt, const std::string& name);
Result<Dir> OpenStepDir(const Dir& ckpt, const std::string& name);

}  // namespace ds::ckpt
