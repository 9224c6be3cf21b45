// JobControl and the per-node form's --nnodes MIN:MAX with ranks
// given at join (options.start_nodes; launcher/cmd/per_node.h). The first
// generation starts on the nodes registered once start_nodes (MIN) did and
// the last-call window passed, or at once when every node (MAX) did; a node
// that registers after that restarts the job to take part (torchrun: a new
// member starts a new round), within elastic.max_restarts (job_control.h).
#include <fmt/format.h>

#include "launcher/coordinator/job_control.h"

namespace ds {

void JobControl::CheckLastCall(Clock::time_point now) {
  if (state_ == CoordState::kWaitingForAgents && now >= last_call_) StartOnRegistered();
}

void JobControl::StartOnRegistered() {
  last_call_ = Clock::time_point::max();
  const std::vector<bool> alive = AliveAgents();
  auto plan = PlanOnNodes(plan_, alive);
  if (!plan.ok()) return Abort("dslaunch", plan.status().message(), 1);
  gen_plan_ = std::move(plan).value();
  gen_agents_.clear();
  for (size_t n = 0; n < alive.size(); ++n)
    if (alive[n]) gen_agents_.push_back(static_cast<int>(n));
  Notice(fmt::format("starting on {} of at most {} nodes (--nnodes {}:{}, last call {} s over), world size {}; a "
                     "node that joins later takes part from a restart",
                     gen_agents_.size(), agents_.size(), opt_.start_nodes, agents_.size(), opt_.last_call,
                     gen_plan_.world_size));
  PrepareGeneration();
}

void JobControl::Grow(int node, const char* how) {
  if (state_ == CoordState::kStopping) {
    Notice(fmt::format("{} {}; it takes part if the job restarts", names_[node], how));
    return;
  }
  const int max_restarts = plan_.job.elastic.max_restarts;
  if (policy_.restarts() >= max_restarts) {
    Notice(fmt::format("{} {}, but {} restarts of {} are left (--max-restarts): it waits until the job ends",
                       names_[node], how, max_restarts - policy_.restarts(), max_restarts));
    return;
  }
  grow_cause_ = fmt::format("{} {}", names_[node], how);
  StopGeneration(grow_cause_, /*restartable=*/true);
}

}  // namespace ds
