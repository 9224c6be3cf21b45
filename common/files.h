// Reading whole files with errors a person can act on. Pure wrappers over
// the filesystem; thread-safe.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

// Returns the bytes of `path`. Errors read "<what> <path>: <reason>", e.g.
// "hostfile /x/h: No such file or directory" (NotFound), "... is a directory"
// (InvalidArgument), or the open/read error (IOError).
Result<std::string> ReadTextFile(const std::string& path, const std::string& what);

// Writes `text` to `path` through a temporary file in the same directory,
// fsynced and renamed over it, with permission bits `mode`: readers see the
// old file or the new one, never a part.
Status WriteFileAtomically(const std::string& path, const std::string& text, unsigned mode);

// Path of a program that ships next to the running one: `override_path` if
// set, else <dir of this executable>/<name>, else <dir>/../<subdir>/<name>
// (the build tree: build/launcher/dslaunch -> build/agent/dsagent).
std::string SiblingBinary(const std::string& name, const std::string& subdir, const std::string& override_path = "");

}  // namespace ds
