// PerNodeSpawner: the per-node launch form (launcher/join/per_node_launch.h), where
// every node runs dslaunch itself. On node 0 only node 0's agent is started
// here (as a local process); every other node's handle stands for an agent
// that node starts on its own: never running as far as this process knows
// (it holds no drain), never ending by itself (its exit_fd is never raised),
// and Terminate() does nothing (that agent stops when the coordinator says
// so, or when it loses the coordinator).
#pragma once

#include <memory>
#include <vector>

#include "launcher/spawn/local_spawner.h"
#include "launcher/spawn/spawner.h"

namespace ds {

class PerNodeSpawner : public Spawner {
 public:
  PerNodeSpawner(int self, LocalSpawnerOptions local) : self_(self), local_(local) {}
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override;

 private:
  int self_;
  LocalSpawner local_;
};

}  // namespace ds
