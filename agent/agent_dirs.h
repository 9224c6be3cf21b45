// The agent's private directories (its workers' error files, its snapshot
// memory): <base>/<prefix><pid>.XXXXXX, made with mkdtemp (mode 0700, unique
// per agent). A SIGKILLed agent cannot remove its own, so the next agent that
// makes one removes those of agents that are gone. Thread-safe.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

// Removes <base>/<prefix><pid>.* left by agents that are gone (their pid
// answers ESRCH), then creates this agent's. Only real directories (lstat)
// owned by this user are removed: nothing of anyone else's, no symlink.
// IOError naming the template when mkdtemp fails.
Result<std::string> MakeAgentDir(const std::string& base, const std::string& prefix);

}  // namespace ds
