// JobControl and eviction (job_control.h, evict.h): with elastic.evict_slow a
// node of the generation that the StragglerDetector or the SlowLinkDetector
// reported is marked, and at the next snapshot boundary (at once without
// snapshots) the generation fails as "evicted" and restarts through the
// ordinary path without it; it sits out restarts for elastic.evict_cooldown.
// Only with a restart left and min_nodes kept: otherwise one line says why
// it stays.
#include <algorithm>

#include <fmt/format.h>

#include "launcher/coordinator/job_control.h"

namespace ds {

void JobControl::MarkSlowForEviction() {
  if (!evictions_.on() || state_ != CoordState::kRunning) return;
  for (uint32_t node : slow_nodes()) {
    if (std::find(gen_agents_.begin(), gen_agents_.end(), static_cast<int>(node)) == gen_agents_.end()) continue;
    if (evictions_.marked().count(node) || !evict_said_.insert(node).second) continue;
    const std::vector<bool> candidates = RestartCandidates();
    const size_t alive = static_cast<size_t>(std::count(candidates.begin(), candidates.end(), true));
    if (policy_.restarts() >= plan_.job.elastic.max_restarts) {
      Notice(fmt::format("evict: {} stays: no restart left (elastic.max_restarts {})", names_[node],
                         plan_.job.elastic.max_restarts));
    } else if (alive <= static_cast<size_t>(plan_.job.elastic.min_nodes)) {
      Notice(fmt::format("evict: {} stays: without it fewer than elastic.min_nodes ({}) are left", names_[node],
                         plan_.job.elastic.min_nodes));
    } else {
      evictions_.Mark(node);
    }
  }
  if (evictions_.pending() && !gather_) Evict("now (the job keeps no snapshots)");
}

void JobControl::OnHeldForEviction(int node, const msg::SnapshotHeld& m) {
  if (!evictions_.on()) return;
  std::vector<int64_t> steps;
  for (const msg::ShardEntry& e : m.added)
    if (e.origin == static_cast<uint32_t>(node)) steps.push_back(e.step);
  if (evictions_.OnHeld(static_cast<uint32_t>(node), steps, gen_agents_) && state_ == CoordState::kRunning)
    Evict(fmt::format("at the snapshot of step {}", evictions_.newest_step()));
}

void JobControl::Evict(const std::string& when) {
  std::string who;
  for (uint32_t node : evictions_.Evict(clock_.Now())) who += (who.empty() ? "" : ", ") + names_[node];
  Notice(fmt::format("evict: {} (slow) leaves {}; out for {:g} s", who, when, plan_.job.elastic.evict_cooldown));
  Fail(who, "evicted as slow", 1, /*restartable=*/true);
}

std::vector<uint32_t> JobControl::slow_nodes() const {
  std::vector<uint32_t> out = stragglers_.Slow();
  for (uint32_t node : slow_links_.Slow())
    if (std::find(out.begin(), out.end(), node) == out.end()) out.push_back(node);
  std::sort(out.begin(), out.end());
  return out;
}

// The candidates of a restart: the alive ones less the evicted in their cooldown.
std::vector<bool> JobControl::RestartCandidates() const {
  std::vector<bool> alive = AliveAgents();
  evictions_.Apply(alive, static_cast<size_t>(plan_.job.elastic.min_nodes), clock_.Now());
  return alive;
}

}  // namespace ds
