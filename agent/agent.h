// RunAgent: dsagent's whole life as one node's agent: connect, authenticate,
// register, then obey the coordinator through AgentControl (agent_control.h)
// until it says Shutdown or is lost, and never leave a worker behind.
// Threads: RunAgent's event loop runs on the calling thread, and everything
// of the agent with it (AgentSession, AgentControl, the workers' pipes),
// except the snapshot keeper (snapshot_keeper.h): its shard server and task
// threads hand their results to the loop through a pipe, and an exception
// on them is caught at the thread's edge and ends the agent with exit code
// 7 (AgentExit::kInternalError), its workers stopped first. One RunAgent
// per process: it installs the signal handlers.
#pragma once

#include <string>

#include "agent/agent_args.h"
#include "agent/control/agent_exit.h"
#include "agent/agent_secret.h"

namespace ds {

// Runs the agent; returns an AgentExit code (SignalExitCode(S) after signal S).
int RunAgent(const AgentOptions& options, const std::string& secret);

}  // namespace ds
