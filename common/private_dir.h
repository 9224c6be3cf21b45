// This user's private directory for dslaunch's own per-user files (the
// per-node form's loopback secret): $XDG_RUNTIME_DIR/dslaunch when
// XDG_RUNTIME_DIR is set, else /run/user/<uid>/dslaunch where that
// directory of ours exists, else /tmp/dslaunch-<uid>, and when another user
// made that first, $HOME/.dslaunch (said once). Made 0700 when missing.
// Another user who can create files in /tmp may plant that name first: what
// is opened is judged on the open descriptor (a real directory, never a
// symlink, owned by this user, no access for group or others), so a planted
// one is refused, never used. Thread-safe; reads the environment and the
// filesystem on every call.
#pragma once

#include <string>

#include "common/status.h"
#include "common/unique_fd.h"

namespace ds {

struct PrivateDir {
  std::string path;  // for messages and for the names of files in it
  UniqueFd fd;       // O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC: work relative to it (openat, renameat, ...)
};

// Opens (making it first when missing) this user's private directory.
// PermissionDenied names the path and what was expected, e.g.
// "/tmp/dslaunch-0 is owned by uid 65534, not by you (uid 0): another user
// made it; remove it, or set XDG_RUNTIME_DIR to a directory of yours".
Result<PrivateDir> OpenPrivateDir();

// The same rules under `base` (the directory XDG_RUNTIME_DIR or /tmp would
// give), for tests: `base`/`name` is made and judged.
Result<PrivateDir> OpenPrivateDirIn(const std::string& base, const std::string& name);

// Where OpenPrivateDir looks; tests give their own.
struct PrivateDirBases {
  std::string xdg;       // $XDG_RUNTIME_DIR ("" = unset)
  std::string run_user;  // /run/user/<uid>
  std::string tmp = "/tmp";
  std::string home;      // $HOME ("" = unset: no fallback)
};
Result<PrivateDir> OpenPrivateDirFrom(const PrivateDirBases& bases);

}  // namespace ds
