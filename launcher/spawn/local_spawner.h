// LocalSpawner: starts every dsagent as a local child process (the "local"
// launcher: all hosts are this machine, e.g. 127.0.0.1..3). Each agent runs
// in its own process group with the secret written to its stdin pipe (then
// closed); nothing secret is in argv or the environment. Terminate() sends
// SIGTERM to the agent's group, then SIGKILL after the grace period (waiting
// on the agent's pidfd, which is also its exit_fd(); needs Linux 5.3+). No
// PR_SET_PDEATHSIG on agents on purpose: like a remote agent, a local one
// must notice a lost coordinator by itself. Start() and handles: one thread.
#pragma once

#include "common/defaults.h"
#include "launcher/spawn/spawner.h"

namespace ds {

struct LocalSpawnerOptions {
  double stop_grace = kDefaultStopGrace;  // SIGTERM -> SIGKILL in Terminate()
};

class LocalSpawner final : public Spawner {
 public:
  explicit LocalSpawner(LocalSpawnerOptions options = {}) : opt_(options) {}
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override;

 private:
  LocalSpawnerOptions opt_;
};

}  // namespace ds
