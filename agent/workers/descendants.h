// Every process a job started, wherever it went: the agent makes itself a
// child subreaper (PR_SET_CHILD_SUBREAPER), so a worker's daemon (setsid,
// double fork) is re-parented to the agent instead of init and stays in the
// agent's process tree, where KillDescendants finds it by walking /proc.
// What remains: if the agent itself is SIGKILLed, its workers die by
// PR_SET_PDEATHSIG but their own children are re-parented to the agent's
// nearest subreaper ancestor (or init) and survive (docs/usage.md).
// Functions of the calling process; not thread-safe with respect to fork.
#pragma once

#include <sys/types.h>

#include <set>
#include <vector>

#include "common/status.h"

namespace ds {

// Marks the calling process a child subreaper. Error when prctl fails.
Status BecomeSubreaper();

// The live (non-zombie) descendants of `root`, from /proc/<pid>/stat, but
// neither the processes in `spare` nor theirs.
std::vector<pid_t> LiveDescendants(pid_t root, const std::set<pid_t>& spare = {});

// SIGKILLs every live descendant of the calling process but `spare` and
// theirs (the launch tree's ssh commands, between generations), scanning
// again until two scans in a row find nobody new (a killed process can no
// longer fork; its children are re-parented to us and found by the next
// scan). Returns how many processes were signalled. Call only when no
// worker of a running generation is left (the workers are descendants too).
int KillDescendants(const std::set<pid_t>& spare = {});

}  // namespace ds
