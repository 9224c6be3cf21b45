// JobControl and restarts: the next generation, on the agents still alive,
// once RestartPolicy (restart_policy.h) said yes (job_control.h).
#include <fmt/format.h>

#include "launcher/coordinator/job_control.h"
#include "launcher/report/job_summary.h"

namespace ds {

std::vector<bool> JobControl::AliveAgents() const {
  std::vector<bool> alive;
  for (size_t n = 0; n < agents_.size(); ++n) alive.push_back(NodeAlive(static_cast<uint32_t>(n)));
  return alive;
}

// Generation + 1 on the nodes the policy picked, the store cleared.
void JobControl::Restart() {
  auto next = policy_.Restart(RestartCandidates(), record_, clock_.Now());
  if (!next.ok()) {  // cannot happen: MayRestart checked min_nodes
    Notice("not restarting: " + next.status().message());
    return Finish();
  }
  gen_plan_ = std::move(next->plan);
  gen_agents_ = std::move(next->agents);
  ++generation_;
  workers_store_lost_ = false;  // every worker of this generation is started with this coordinator's store
  const std::string cause = !grow_cause_.empty()         ? grow_cause_
                            : record_.first_failure() ? DescribeFailure(*record_.first_failure())
                                                      : "?";
  grow_cause_.clear();
  failure_time_ = record_.first_failure_time;
  record_.NewGeneration(generation_);
  progress_.NewGeneration();
  stragglers_.Reset();
  hangs_.Reset();
  evictions_.ClearMarks();
  evict_said_.clear();
  stacks_.Clear();  // one still being collected belonged to the generation that ended
  store_.Clear();  // the last generation's rendezvous keys must not leak into this one
  master_port_ = opt_.master_port;
  Notice(fmt::format("restart {}/{}: generation {} on {} node{}, world size {}, after {}", policy_.restarts(),
                     plan_.job.elastic.max_restarts, generation_, gen_agents_.size(),
                     gen_agents_.size() == 1 ? "" : "s", gen_plan_.world_size, cause));
  PrepareGeneration();
}

}  // namespace ds
