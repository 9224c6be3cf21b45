// ChildAgents: the agents this agent starts for the launch tree
// (--fanout-tree): on StartAgents it runs each node's command (an ssh
// command line the launcher built) with that node's own agent token (sent in
// StartAgents, one per node) as the first line
// of its stdin, the pipe kept open while this agent lives (its end stops a
// child agent that has not registered yet: dsagent --tree-parent). The
// commands' output is relayed to this agent's log, prefixed by the host;
// when a command ends, OnExited gives the AgentEnded to report, with its
// last stderr lines as the reason. Each command runs as a WorkerProcess
// (own process group, PR_SET_PDEATHSIG), so this agent's death closes their
// connections. It is the agent's LaunchTreeChildren (agent_seams.h). Not
// thread-safe: the agent's event loop only.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/control/seams.h"
#include "agent/workers/worker_process.h"
#include "wire/protocol.h"

namespace ds {

class ChildAgents final : public LaunchTreeChildren {
 public:
  ChildAgents() = default;
  ~ChildAgents() override;  // SIGKILLs the commands still running

  // Starts every command. One that cannot be started is returned as its
  // AgentEnded at once (exit code 127 and the reason).
  std::vector<msg::AgentEnded> Start(const msg::StartAgents& m) override;
  void AddPollFds(std::vector<pollfd>* fds) const;
  // Reads `fd` if it is one of the commands' pipes; false if it is not.
  bool OnReadable(int fd);
  // `pid` ended with wait status `status`: its AgentEnded, or nullopt when
  // it is not one of the commands.
  std::optional<msg::AgentEnded> OnExited(pid_t pid, int status);
  size_t running() const override { return children_.size(); }
  std::set<pid_t> pids() const;

 private:
  struct Child {
    uint32_t node = 0;
    std::string host;
    std::unique_ptr<WorkerProcess> proc;
    std::string stderr_tail;  // its last stderr lines, at most kMaxAgentEndedReason bytes
  };
  void Relay(Child& c, int stream, std::string line);

  std::vector<Child> children_;
};

}  // namespace ds
