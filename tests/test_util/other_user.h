// Another local user, for real, in tests of what such a user can do to our
// files: commands run as nobody:nogroup without supplementary groups
// (setpriv), in a directory everyone may write to. Staging it needs root
// (to become nobody, and to be the victim); tests skip with a warning
// without it. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "tests/test_util/skip.h"

namespace ds::testing {

inline constexpr uid_t kNobody = 65534;

// True when this process can stage another user (it runs as root).
bool CanActAsNobody();

// Runs argv as nobody:nogroup (setpriv --reuid=nobody --regid=nogroup
// --clear-groups); true when it exits 0.
bool AsNobody(std::vector<std::string> argv);

// Writes `content` to `path` as nobody (a file another user plants); true
// when it was written.
bool WriteAsNobody(const std::string& path, const std::string& content);

// Why a test case that stages another user skips where it cannot:
// `if (!CanActAsNobody()) DS_SKIP(kNeedsOtherUser);` (tests/test_util/skip.h).
inline constexpr const char* kNeedsOtherUser = "not root: another user (nobody) cannot be staged";

// <base> (0755, ours) holding `shared`, a 0777 directory that is not sticky:
// anyone may add, rename or remove its entries. Removed with everything in it.
struct SharedDir {
  SharedDir();
  ~SharedDir();
  SharedDir(const SharedDir&) = delete;
  SharedDir& operator=(const SharedDir&) = delete;
  std::string base, shared;
};

// The owner of `path` itself (lstat); -1 when it cannot be read.
uid_t OwnerOf(const std::string& path);

// Everything under `dir`, not following symlinks: relative path -> the
// file's bytes, "<dir>" for a directory, "-> target" for a symlink. Two
// equal trees show that nothing was written, renamed or removed.
std::map<std::string, std::string> TreeOf(const std::string& dir);

}  // namespace ds::testing
