// Pieces every fork/exec of the project shares (ninja subprocess-posix
// style): execve's NULL-terminated string arrays, and a fork that never lets
// the parent's signal handlers run in the child. Used by the local spawner,
// the agent's worker processes and the pdsh spawner. Not thread-safe per
// object; the functions are safe to call from any thread.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace ds {

// Owns strings and the NULL-terminated char* array over them that
// execve/posix_spawn take. Neither copyable nor movable: the pointers point
// into this object's strings.
class CStringArray {
 public:
  explicit CStringArray(std::vector<std::string> strings);
  // "KEY=VALUE" entries, in order.
  explicit CStringArray(const std::vector<std::pair<std::string, std::string>>& env);
  CStringArray(const CStringArray&) = delete;
  CStringArray& operator=(const CStringArray&) = delete;

  char* const* data() const { return ptrs_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> ptrs_;
};

// fork() with every signal blocked across it, so a handler of the parent
// (e.g. one writing to a self-pipe) never runs in the child. Returns what
// fork() returns; the parent's mask is restored before returning in it.
pid_t ForkWithSignalsBlocked();

// In the child after ForkWithSignalsBlocked: every disposition back to the
// default, nothing blocked. Async-signal-safe.
void ResetSignalsInChild();

}  // namespace ds
