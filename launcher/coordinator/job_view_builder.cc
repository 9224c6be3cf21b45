#include "launcher/coordinator/job_view_builder.h"

#include <algorithm>

namespace ds {
namespace {

double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

NodeSnapshotView NodeSnapshots(const NodeSnapshotFigures& f) {
  NodeSnapshotView s;
  s.step = f.newest_step;
  s.in_memory = f.newest_in_memory;
  s.bytes_held = f.bytes_held;
  s.handed_bytes = f.totals.handoff_bytes;
  s.replica_bytes = f.totals.sent_bytes;
  s.replica_seconds = static_cast<double>(f.totals.sent_micros) / 1e6;
  s.disk_bytes = f.totals.persisted_bytes;
  s.disk_seconds = static_cast<double>(f.totals.persist_micros) / 1e6;
  return s;
}

void AddNodes(const JobControl& c, Clock::time_point now, JobView& v) {
  const std::vector<int>& running = c.generation_nodes();
  const std::vector<uint32_t> straggling = c.straggling_nodes(), slow_links = c.slow_link_nodes();  // sorted
  for (size_t i = 0; i < c.num_candidates(); ++i) {
    NodeView n;
    n.node = static_cast<uint32_t>(i);
    n.host = c.NodeName(i);
    const bool registered = c.NodeRegistered(static_cast<int>(i));
    if (c.NodeLost(i)) n.state = "lost", ++v.nodes_lost;
    else if (c.NodeEnded(i)) n.state = "ended";
    else if (!registered) n.state = "waiting";
    else if (std::find(running.begin(), running.end(), static_cast<int>(i)) != running.end()) n.state = "running";
    else n.state = "idle";
    if (registered && !c.NodeLost(i) && !c.NodeEnded(i)) {
      ++v.agents_registered;
      n.heard_seconds_ago = std::max(0.0, SecondsBetween(c.LastHeard(i), now));
      n.rtt_seconds = c.HeartbeatRtt(i);
    }
    if (const SnapshotTally* t = c.snapshots()) n.snapshot = NodeSnapshots(t->Node(static_cast<int>(i)));
    n.slow = std::binary_search(straggling.begin(), straggling.end(), n.node);
    n.slow_link = std::binary_search(slow_links.begin(), slow_links.end(), n.node);
    v.nodes.push_back(std::move(n));
  }
}

}  // namespace

const char* StateName(CoordState s) {
  switch (s) {
    case CoordState::kWaitingForAgents: return "waiting";
    case CoordState::kGathering: return "gathering";
    case CoordState::kReserving: return "reserving";
    case CoordState::kRunning: return "running";
    case CoordState::kStopping: return "stopping";
    case CoordState::kDone: return "done";
  }
  return "?";
}

JobView BuildJobView(const JobControl& c, const JobRecord& record, Clock::time_point now) {
  JobView v;
  v.job_id = c.options().job_id;
  v.state = StateName(c.state());
  // 0 until the job starts (before JobControl::Start its start time is unset).
  v.elapsed_seconds = c.start_time() == Clock::time_point{} ? 0 : std::max(0.0, SecondsBetween(c.start_time(), now));
  v.generation = c.generation();
  v.restarts = c.restarts();
  v.max_restarts = c.plan().job.elastic.max_restarts;
  v.world_size = c.world_size();
  for (const auto& [rank, w] : record.workers()) v.ranks_running += w.running() ? 1 : 0;
  AddNodes(c, now, v);
  if (const SnapshotTally* t = c.snapshots()) {
    v.snapshots = true;
    v.snapshots_taken = t->saves();
    v.snapshot_step = t->newest_step();
  }
  if (const auto r = c.recovery()) {
    v.recovery_point_step = r->point;
    v.steps_at_risk = r->steps_at_risk;
    v.worst_steps_at_risk = r->worst_at_risk;
  }
  for (const RankProgress& p : c.progress().Ranks()) {
    RankView r{p.rank, p.node, "", p.step, p.step_seconds, p.samples_per_second, p.save_stall_seconds,
               p.loss_step, p.loss, p.accuracy_step, p.accuracy};
    if (p.node < c.num_candidates()) r.host = c.NodeName(p.node);
    v.ranks.push_back(std::move(r));
  }
  return v;
}

}  // namespace ds
