// Spawner: starts one dsagent per node and keeps a handle on it. The agent
// connects back to the coordinator by itself (address in its argv); the
// spawner only gets it running and, on Terminate, makes sure it is gone.
// Implementations: local processes (local_spawner), libssh (ssh_spawner),
// the pdsh binary (pdsh_spawner); tests/launcher/spawn/fake_spawner.h is
// the fake the AgentFleet tests use.
// Start() may be called from one thread at a time; handles are safe to use
// from any one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ds {

struct AgentSpec {
  std::string host;                // as written in the hostfile
  int node_index = 0;              // position in the plan
  std::optional<int> ssh_port;     // hostfile ssh_port= or --ssh_port
  std::string user;                // hostfile user= (ssh config otherwise)
  std::vector<std::string> argv;   // dsagent command line; never holds secrets
  std::string stdin_payload;       // written once to the agent's stdin (the job secret); never logged
};

// A running agent. Running() and ExitStatus() never block; to wait for the
// end without polling them, poll exit_fd() for POLLIN.
class AgentHandle {
 public:
  virtual ~AgentHandle() = default;  // Terminate()s if still running
  // False once the agent process (or its SSH channel) has ended.
  virtual bool Running() = 0;
  // Ends the agent: SIGTERM then SIGKILL to a local agent's process group, or
  // closes the SSH channel (the agent then kills its workers). Idempotent.
  virtual void Terminate() = 0;
  // Exit status once ended (-1 if unknown), for the summary.
  virtual int ExitStatus() = 0;
  // A file descriptor that becomes readable once the agent has ended (a
  // pidfd for a local process, an eventfd the SSH reader sets). Owned by
  // the handle, valid until it is destroyed; the caller only polls it.
  virtual int exit_fd() const = 0;
};

class Spawner {
 public:
  virtual ~Spawner() = default;
  // Starts every agent in parallel with bounded fan-out. Returns one result
  // per spec, in the same order; one host's failure never hides another's.
  // Error messages start with the host name and keep the tool's own reason
  // (e.g. "w3: connection refused").
  virtual std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) = 0;
  // True when one run of a tool starts many agents with one stdin (srun,
  // mpirun, pdsh): their specs must share one stdin_payload. Otherwise each
  // agent gets a token of its own node.
  virtual bool SharesPayload() const { return false; }
};

// What a Start() fills per spec, in any order and from any thread (one slot
// each); TakeStartResults turns it into Start()'s answer once every slot is set.
using StartSlots = std::vector<std::optional<Result<std::unique_ptr<AgentHandle>>>>;
inline std::vector<Result<std::unique_ptr<AgentHandle>>> TakeStartResults(StartSlots& slots) {
  std::vector<Result<std::unique_ptr<AgentHandle>>> out;
  out.reserve(slots.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

}  // namespace ds
