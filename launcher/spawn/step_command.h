// The one dsagent command line that a step launcher (srun, mpirun) runs on
// several nodes at once: the specs' shared argv without --node-index and
// --host, plus --step-nodes I=HOST,... and --step-identity VAR, from which
// each agent finds its own node (agent/main.cc).
#pragma once

#include <string>
#include <vector>

#include "launcher/spawn/spawner.h"

namespace ds {

// Linux's limit on one argument (MAX_ARG_STRLEN); --step-nodes must fit.
inline constexpr size_t kMaxArgBytes = 131072;

// InvalidArgument when the specs differ in more than --node-index/--host
// (for example a per-node --bind) or the node list does not fit in one
// argument (the message says how many nodes at most).
Result<std::vector<std::string>> StepAgentArgv(const std::vector<AgentSpec>& specs, const std::string& identity_var);

}  // namespace ds
