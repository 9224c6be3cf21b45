// A process's private directories (an agent's workers' error files and
// snapshot memory, an MPI launch's token and ssh wrapper):
// <base>/<prefix><pid>.XXXXXX, made with mkdtemp (mode 0700, unique per
// process). A SIGKILLed process cannot remove its own, so the next process
// that makes one with the same prefix removes those of processes that are
// gone. Thread-safe.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

// Removes <base>/<prefix><pid>.* left by processes that are gone (their pid
// answers ESRCH), then creates this process's. Only real directories (lstat)
// owned by this user are removed: nothing of anyone else's, no symlink.
// IOError naming the template when mkdtemp fails.
Result<std::string> MakeProcessDir(const std::string& base, const std::string& prefix);

}  // namespace ds
