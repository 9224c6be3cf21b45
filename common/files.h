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

// Path of a program that ships next to the running one: `override_path` if
// set, else <dir of this executable>/<name>, else <dir>/../<subdir>/<name>
// (the build tree: build/launcher/dslaunch -> build/agent/dsagent).
std::string SiblingBinary(const std::string& name, const std::string& subdir, const std::string& override_path = "");

}  // namespace ds
