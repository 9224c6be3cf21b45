// The agent's key (its job token): read once at start from a private file,
// a descriptor or stdin, or shared through MPICH's PMI. Called by main.cc
// before RunAgent, on the main thread; the descriptors read are closed.
#pragma once

#include <string>

#include "agent/agent_args.h"
#include "common/status.h"

namespace ds {

// Reads the job secret: the first line of `secret_file` when it is a regular
// file of this user with no group or other permissions (MpirunSpawner leaves
// one on mpirun's node, where Open MPI's --stdin all gives a process a stdin
// that never ends), else of DSLAUNCH_SECRET_FD if set, else of stdin; the fd
// is closed afterwards. Error when there is none.
Result<std::string> ReadAgentSecret(const std::string& secret_file = "");

// The agent's key as `o` says: ReadAgentSecret, or with --secret-via-pmi
// rank 0 (PMI_RANK) reads it so and shares it with the other ranks through
// the PMI key-value space on PMI_FD (agent/pmi_token.h).
Result<std::string> ReadAgentKey(const AgentOptions& o);

}  // namespace ds
