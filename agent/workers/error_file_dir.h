// ErrorFileDir: the agent's private directory for its workers'
// TORCHELASTIC_ERROR_FILEs. Created on first use with mkdtemp under $TMPDIR
// (else /tmp) as dsagent-errors.<pid>.XXXXXX, so it is unique per agent and
// mode 0700: nobody else can place, swap or read a file in it. One file name
// per generation and rank; the directory and everything in it go when the
// object is destroyed (the agent's exit, whichever way it ends but SIGKILL).
// What a SIGKILLed agent left is removed by the next agent that creates its
// own: directories of that name whose pid is gone and that belong to this
// user. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "common/torch_error_file.h"

namespace ds {

class ErrorFileDir {
 public:
  ErrorFileDir() = default;
  ~ErrorFileDir();
  ErrorFileDir(const ErrorFileDir&) = delete;
  ErrorFileDir& operator=(const ErrorFileDir&) = delete;

  // The error-file path for `rank` in `generation`, with nothing there:
  // creates the directory on the first call and removes a stale file.
  // Error (naming the path) when either fails.
  Result<std::string> Prepare(uint32_t generation, int rank);
  // The directory, "" until the first Prepare.
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// The error a worker wrote at `path`, when the file is there and can be
// trusted: a regular file (opened O_NOFOLLOW: a symlink is refused) owned by
// `uid`, at most kMaxErrorFileBytes, in PyTorch's format. nullopt otherwise;
// each refusal is logged at DEBUG (PROC) with the reason.
std::optional<TorchError> ReadWorkerErrorFile(const std::string& path, uid_t uid);

}  // namespace ds
