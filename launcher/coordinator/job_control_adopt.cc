// JobControl taking over a job whose coordinator was lost (coordinator
// failover; job_control.h Adopt): the durable state first, then the running
// generation as its agents report it with Resume. Adopted as it runs when
// everything matches; else the ordinary restart path, with one line saying
// why.
#include <algorithm>

#include <fmt/format.h>

#include "launcher/coordinator/job_control.h"
#include "launcher/report/job_summary.h"

namespace ds {

Status JobControl::Adopt(const JobState& s) {
  DS_RETURN_IF_ERROR(Restore(s));
  if (s.phase == CoordState::kDone)
    return Status::InvalidArgument(fmt::format("job {} has ended; there is nothing to take over", s.job_id));
  Adoption a;
  for (size_t n = 0; n < s.candidates.size(); ++n)
    if (s.candidates[n].registered && !s.candidates[n].lost) a.awaited.insert(static_cast<int>(n));
  if (s.phase != CoordState::kRunning) {
    // Nothing runs yet (a generation gathering or reserving): it starts
    // again as the next one once everyone is back.
    if (s.phase != CoordState::kWaitingForAgents) {
      ++generation_;
      Notice(fmt::format("the old coordinator was lost while generation {} was starting ({}); it starts again "
                         "as generation {}", s.generation, CoordStateName(s.phase), generation_));
    }
    return Status::OK();
  }
  std::vector<bool> keep(agents_.size(), false);
  for (int n : s.generation_nodes) {
    if (n < 0 || static_cast<size_t>(n) >= agents_.size())
      return Status::InvalidArgument(fmt::format("job state's generation runs on candidate {}; this plan has {}", n,
                                                 agents_.size()));
    keep[n] = true;
  }
  a.generation = s.generation;
  workers_store_lost_ = true;
  gen_agents_ = s.generation_nodes;
  master_port_ = s.master_port;
  auto plan = PlanOnNodes(plan_, keep);
  if (!plan.ok()) a.mismatch = plan.status().message();
  else if (plan->world_size != s.world_size || !std::is_sorted(gen_agents_.begin(), gen_agents_.end()))
    a.mismatch = fmt::format("its layout (world size {}) is not this plan's on the same nodes (world size {})",
                             s.world_size, plan->world_size);
  else gen_plan_ = std::move(plan).value();
  if (!a.mismatch.empty()) gen_plan_.world_size = s.world_size;
  for (int n : gen_agents_) a.awaited.insert(n);
  adopting_ = std::move(a);
  return Status::OK();
}

void JobControl::SetCoordinators(std::vector<std::string> addresses) {
  coordinators_.addresses = std::move(addresses);
  const Bytes payload = coordinators_.Encode();
  for (size_t n = 0; n < agents_.size(); ++n)
    if (agents_[n].up()) SendTo(static_cast<int>(n), wire::MsgType::kCoordinators, payload);
}

void JobControl::OnResume(int node, const msg::Resume& m) {
  const bool in_generation = std::find(gen_agents_.begin(), gen_agents_.end(), node) != gen_agents_.end();
  if (!adopting_ && in_generation && state_ == CoordState::kRunning && m.running &&
      static_cast<int>(m.generation) == generation_)
    return;  // back with this generation's workers (OnRegister's `back`): they run on
  const bool ours = adopting_ && in_generation && !adopting_->resumed.count(node);
  if (!ours) {
    // Workers of a generation this coordinator does not run (a node lost
    // and back, a generation given up): they go, the agent idles.
    if (m.running && !m.workers.empty())
      SendTo(node, wire::MsgType::kStop, msg::Stop{m.generation}.Encode());
    return;
  }
  Adoption& a = *adopting_;
  a.resumed.insert(node);
  if (!m.running || static_cast<int>(m.generation) != a.generation) {
    if (a.mismatch.empty())
      a.mismatch = fmt::format("{} kept {}, the job's is generation {}", names_[node],
                               m.running ? fmt::format("generation {}", m.generation) : "no workers", a.generation);
    // The fallback's Stop must reach a generation newer than the state written.
    if (m.running) generation_ = std::max(generation_, static_cast<int>(m.generation));
  }
  for (const msg::ResumedWorker& w : m.workers) {
    record_.OnAssigned(w.rank, node, names_[node]);
    record_.OnStarted(w.rank, w.pid);
  }
  agents_[node].SetBusy(m.running != 0);
  MaybeAdopt();
}

void JobControl::MaybeAdopt() {
  for (int n : adopting_->awaited)
    if (!agents_[n].registered()) return;
  for (int n : gen_agents_)
    if (!adopting_->resumed.count(n) && !NodeLost(n)) return;
  Adopted();
}

void JobControl::Adopted() {
  Adoption a = std::move(*adopting_);
  adopting_.reset();
  std::vector<std::string> missing;
  for (int n : gen_agents_)
    if (!a.resumed.count(n)) missing.push_back(names_[n]);
  if (!missing.empty() && a.mismatch.empty())
    a.mismatch = fmt::format("{} did not come back", fmt::join(missing, ", "));
  state_ = CoordState::kRunning;
  if (a.mismatch.empty() && record_.num_started() != gen_plan_.world_size)
    a.mismatch = fmt::format("its agents reported {} of its {} workers", record_.num_started(), gen_plan_.world_size);
  if (!a.mismatch.empty()) {
    takeover_ = fmt::format("generation {} cannot be taken over as it runs: {}; {}", a.generation, a.mismatch,
                            in_place_ ? "its survivors recover in place if they can, else it restarts" : "it restarts");
    Notice(takeover_);
    grow_cause_ = "the coordinator failover (" + a.mismatch + ")";
    return StopGeneration(a.mismatch, /*restartable=*/true);
  }
  takeover_ = fmt::format("took over generation {}: its {} worker(s) on {} node(s) ran on, none restarted", generation_,
                          gen_plan_.world_size, gen_agents_.size());
  Notice(takeover_);
  // What ended while no coordinator listened (the agents held it) counts now.
  if (const auto& f = record_.first_failure())
    return StopGeneration(DescribeFailure(*f), /*restartable=*/true);
  if (record_.AllExitedOk()) Finish();
}

}  // namespace ds
