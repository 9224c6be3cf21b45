// dsagent's library: the command line (documented in main.cc), the secret
// reader, and RunAgent, the agent's whole life: connect, authenticate,
// register, obey Reserve/Assign/Stop/Shutdown, relay worker output and exits,
// and kill every worker when the coordinator is lost. Single-threaded; one
// RunAgent per process (it installs signal handlers).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

struct AgentOptions {
  std::string coordinator;          // --coordinator HOST:PORT (required)
  int node_index = -1;              // --node-index N (required)
  std::string job_id;               // --job-id ID (required)
  std::string bind_addr;            // --bind ADDR; "" = the address that routes to the coordinator
  std::string host;                 // --host NAME; "" = gethostname()
  double heartbeat_interval = 1.0;  // --heartbeat-interval S: Ping period
  double heartbeat_timeout = 5.0;   // --heartbeat-timeout S: coordinator silent this long = lost
  double connect_timeout = 10.0;    // --connect-timeout S: connect + handshake
};

// Parses argv (without the program name). InvalidArgument names the flag:
// "--node-index: expected a non-negative integer, got 'x'".
Result<AgentOptions> ParseAgentArgs(const std::vector<std::string>& args);
std::string AgentUsage();

// Reads the job secret: the first line of DSLAUNCH_SECRET_FD if set, else of
// stdin; the fd is closed afterwards. Error when empty or unreadable.
Result<std::string> ReadAgentSecret();

// Runs the agent; returns the process exit code documented in main.cc.
int RunAgent(const AgentOptions& options, const std::string& secret);

}  // namespace ds
