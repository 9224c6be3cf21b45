// Pieces every fork/exec of the project shares (ninja subprocess-posix
// style): execve's NULL-terminated string arrays, a fork that never lets
// the parent's signal handlers run in the child, and the one rule for
// descriptors: a program we start gets 0, 1 and 2 and what its spawner
// passes on purpose, nothing else (not a listening socket, not another
// job's file, whatever flag it was opened with). Used by every spawner: the
// local one, the agent's worker processes, the tool group (pdsh, srun,
// mpirun), the cluster commands and the per-node exec. Not thread-safe per
// object; the functions are safe to call from any thread.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <initializer_list>
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

// Before exec (in a forked child, or in a process about to exec itself):
// every descriptor above stderr becomes close-on-exec, except those in
// `keep`, which are made to survive the exec. Async-signal-safe
// (close_range(2), or fcntl up to RLIMIT_NOFILE on a kernel without it).
void CloseOnExecAboveStderr(std::initializer_list<int> keep = {});

// The same rule for posix_spawn: appends to `fa` the closing of every
// descriptor above stderr (after the dup2s already added). Returns 0 or an
// errno value.
int AddCloseAboveStderr(posix_spawn_file_actions_t* fa);

}  // namespace ds
