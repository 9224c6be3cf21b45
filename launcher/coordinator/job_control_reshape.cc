// JobControl and in-place recovery (job_control.h; docs/usage.md
// "In-place recovery", checkpoint_format.md "In-place recovery"). After a worker's failure or a
// lost node, with elastic.in_place on a dstrain job with snapshots, the
// generation is not stopped: RestartPolicy plans the next one as for a
// restart (and counts it), SnapshotGather picks the save, and each agent of
// the new generation gets Reshape (its running workers' old -> new ranks,
// the save, where its shards are); a node that gains a replacement rank (the
// crashed worker's, a standby's) also gets an Assign for it. The recovery is
// done when every agent answered Reshaped with every worker ok and every
// replacement started; anything else falls back to the full restart.
#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "launcher/coordinator/job_control.h"

namespace ds {

bool JobControl::TryReshape(const std::string& why) {
  if (!in_place_ || state_ != CoordState::kRunning || reshaping_) return false;
  const std::vector<bool> alive = RestartCandidates();  // an evicted node's workers move to -1
  if (!policy_.WhyNot(record_, alive).empty()) return false;  // the full stop says why not
  const auto now = clock_.Now();
  auto next = policy_.Restart(alive, record_, now);  // counts it
  if (!next.ok()) return false;
  // The save first: no agent has heard of the next generation yet, so the
  // full restart can still stop this one as it is.
  std::string cannot;
  Gathering g;
  if (gather_->Begin(generation_ + 1, next->agents).kind != GatherEvent::Kind::kReady)
    cannot = "an agent of the new generation has not set up its snapshots yet";
  else if (g = gather_->Gather(AliveAgents(), now); gather_->resume_step() < 0)
    cannot = "no complete snapshot to roll back to";
  gather_->Abandon();  // the agents answer in Reshaped, not Fetched
  if (!cannot.empty()) {
    policy_.Refund();
    Notice(fmt::format("in-place recovery of generation {} failed: {}; restarting every worker", generation_ + 1,
                       cannot));
    return false;
  }
  const LaunchPlan old_plan = std::exchange(gen_plan_, std::move(next->plan));
  const std::vector<int> old_agents = std::exchange(gen_agents_, std::move(next->agents));
  std::map<int, int> old_pids;  // the old generation's ranks still running: rank -> pid
  for (const auto& [rank, w] : record_.workers())
    if (w.running()) old_pids[rank] = w.pid;
  ++generation_;
  reshaping_.emplace(now, now + Seconds(plan_.job.elastic.in_place_deadline + opt_.heartbeat_interval),
                     record_.first_failure());
  failure_time_ = now;
  record_.NewGeneration(generation_);
  progress_.NewGeneration();
  stragglers_.Reset();
  store_.Clear();  // the new communicators' keys live under the new generation
  DS_LOG(Info, Coord) << "generation " << generation_ << ": recovering in place after " << why;
  reshaping_->SetSave(gather_->resume_step(), gather_->DescribeSources());
  for (const Gathering::Order& o : g.orders) SendTo(o.node, wire::MsgType::kReplicate, o.replicate.Encode());
  const double ms = std::ceil(plan_.job.elastic.in_place_deadline * 1000);
  SendReshapes(old_plan, old_agents, old_pids, g.fetch.sources, static_cast<uint32_t>(ms));
  Rearm();
  return true;
}

// Each node of the new generation: Reshape (its running workers' moves; a
// node new to the generation gathers only), then an Assign for the ranks it
// gains. A node of the old generation left out (a host in its cooldown):
// its workers move to -1.
void JobControl::SendReshapes(const LaunchPlan& old_plan, const std::vector<int>& old_agents,
                              const std::map<int, int>& old_pids, const std::vector<msg::ShardSource>& sources,
                              uint32_t deadline_ms) {
  msg::Reshape base;
  base.generation = static_cast<uint32_t>(generation_);
  base.step = gather_->resume_step();
  base.id = gather_->resume_id();
  base.world = static_cast<uint32_t>(gen_plan_.world_size);
  base.deadline_ms = deadline_ms;
  base.sources = sources;
  const AssignContext ctx = MakeAssignContext();
  if (workers_store_lost_) {
    base.store_addr = ctx.gen.store_addr;
    base.store_token = ctx.gen.store_token;
  }
  auto old_node_of = [&](int agent) {
    for (size_t i = 0; i < old_agents.size(); ++i)
      if (old_agents[i] == agent) return static_cast<int>(i);
    return -1;
  };
  for (size_t j = 0; j < gen_agents_.size(); ++j) {
    const int agent = gen_agents_[j];
    const NodePlan& now_node = gen_plan_.nodes[j];
    const int was = old_node_of(agent);
    msg::Reshape r = base;
    std::set<int> fresh;  // new ranks that need a new process
    for (int l = 0; l < now_node.num_workers(); ++l) {
      const int new_rank = now_node.first_rank + l;
      const bool kept = was >= 0 && l < old_plan.nodes[was].num_workers() &&
                        old_pids.count(old_plan.nodes[was].first_rank + l);
      if (kept) r.moves.push_back({old_plan.nodes[was].first_rank + l, new_rank});
      else fresh.insert(new_rank);
    }
    for (int l = now_node.num_workers(); was >= 0 && l < old_plan.nodes[was].num_workers(); ++l)
      if (old_pids.count(old_plan.nodes[was].first_rank + l)) r.moves.push_back({old_plan.nodes[was].first_rank + l, -1});
    msg::Assign a = NodeAssign(j, ctx);
    for (const msg::WorkerSpec& w : a.workers) {
      record_.OnAssigned(w.rank, agent, names_[agent]);
      for (const msg::RankMove& mv : r.moves)
        if (mv.new_rank == w.rank) record_.OnStarted(w.rank, old_pids.at(mv.old_rank));
    }
    std::erase_if(a.workers, [&](const msg::WorkerSpec& w) { return !fresh.count(w.rank); });
    agents_[agent].SetBusy(true);
    reshaping_->Owe(agent);
    SendTo(agent, wire::MsgType::kReshape, r.Encode());
    if (a.workers.empty()) continue;
    for (const msg::WorkerSpec& w : a.workers) reshaping_->ExpectStart(w.rank);
    SendTo(agent, wire::MsgType::kAssign, a.Encode());
  }
  for (size_t i = 0; i < old_agents.size(); ++i) {
    const int agent = old_agents[i];
    if (std::find(gen_agents_.begin(), gen_agents_.end(), agent) != gen_agents_.end() || !NodeAlive(agent)) continue;
    msg::Reshape r = base;
    r.sources.clear();
    for (int l = 0; l < old_plan.nodes[i].num_workers(); ++l)
      if (old_pids.count(old_plan.nodes[i].first_rank + l)) r.moves.push_back({old_plan.nodes[i].first_rank + l, -1});
    reshaping_->Owe(agent);
    SendTo(agent, wire::MsgType::kReshape, r.Encode());
  }
}

void JobControl::OnReshaped(int node, const msg::Reshaped& m) {
  if (!reshaping_ || !reshaping_->Owes(node)) return;  // stale
  if (!m.error.empty()) return StopGeneration(Printable(m.error), true);
  for (const msg::RankVerdict& v : m.workers)
    if (!v.ok) return StopGeneration(fmt::format("{} rank {} {}", names_[node], v.rank, Printable(v.why)), true);
  DS_LOG(Info, Coord) << names_[node] << " reshaped to generation " << generation_ << " in " << m.micros / 1000.0
                      << " ms";
  reshaping_->Answered(node);
  MaybeFinishReshape();
}

void JobControl::MaybeFinishReshape() {
  if (!reshaping_ || !reshaping_->done()) return;
  Notice(reshaping_->DoneLine(clock_.Now()));
  workers_store_lost_ = false;  // every worker holds this coordinator's store now
  gather_->Resumed();
  SendSnapshotPlan();
  reshaping_.reset();
  Rearm();
}

void JobControl::EndReshape(const std::string& why, bool restartable) {
  if (restartable)
    Notice(fmt::format("in-place recovery of generation {} failed: {}; restarting every worker", generation_, why));
  // Without a second failure the generation's is the recovery itself; its exit
  // code the one it followed (the record of that rank is the old generation's).
  if (!record_.first_failure()) {
    Failure f;
    f.time = std::chrono::system_clock::now();
    f.host = reshaping_->cause() ? reshaping_->cause()->host : "dslaunch";
    f.what = "in-place recovery failed: " + why;
    f.exit_code = reshaping_->cause() ? reshaping_->cause()->ProcessExitCode() : 1;
    record_.RecordFailure(std::move(f));
  }
  // The failure it followed is the restart's cause (the record took it when
  // the recovery began): the full restart is the same restart, with this one's why.
  if (restartable && reshaping_->cause()) record_.InPlaceRecoveryFailed(why);
  reshaping_.reset();
  policy_.Refund();  // the full restart counts this failure's restart
}

void JobControl::CheckReshapeDeadline(Clock::time_point now) {
  if (!reshaping_ || now < reshaping_->deadline()) return;
  StopGeneration(reshaping_->LateReason(names_, plan_.job.elastic.in_place_deadline), true);
}

}  // namespace ds
