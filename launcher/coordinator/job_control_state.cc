// JobControl and its durable state (job_state.h): the value taken from the
// parts that remember (the generation, RestartPolicy's budget, Evictions'
// cooldowns, the recovery point), and given back to a coordinator taking
// over the job; and telling whoever listens when it changed.
#include <utility>

#include <fmt/format.h>

#include "launcher/coordinator/job_control.h"

namespace ds {

JobState JobControl::State() const {
  JobState s;
  s.job_id = opt_.job_id;
  s.run_id = opt_.run_id;
  s.phase = Phase();
  s.generation = generation_;
  s.generation_nodes = gen_agents_;
  s.world_size = gen_plan_.world_size;
  s.master_port = master_port_;
  for (size_t n = 0; n < agents_.size(); ++n)
    s.candidates.push_back({names_[n], agents_[n].registered(), agents_[n].slot == SlotState::kLost});
  s.budget = policy_.budget();
  s.evicted_until = evictions_.cooldowns();
  if (gather_) {
    s.recovery_point = gather_->recovery_point();
    s.worst_at_risk = gather_->recovery().worst_at_risk;
  }
  return s;
}

CoordState JobControl::Phase() const {
  // Adopting, the generation runs on as far as the job is concerned: a
  // leader lost before its agents are all back must leave a state that says
  // so, for the next one to adopt it too.
  return adopting_ ? CoordState::kRunning : state_;
}

void JobControl::PublishState() {
  if (!on_state_) return;
  const Clock::time_point now = clock_.Now();
  // A new phase or generation is given at once (a takeover must not find
  // the one before); the rest (registrations, losses, the recovery point)
  // waits for the next look.
  const bool moved = !published_ || published_->phase != Phase() || published_->generation != generation_;
  if (!moved && now < state_looked_at_ + kStateEvery) {
    if (!std::exchange(state_pending_, true)) Rearm();  // the timer looks at it then
    return;
  }
  state_pending_ = false;
  state_looked_at_ = now;
  JobState s = State();
  if (published_ && *published_ == s) return;
  published_ = std::move(s);
  on_state_(*published_);
}

Status JobControl::Restore(const JobState& s) {
  if (s.job_id != opt_.job_id)
    return Status::InvalidArgument(fmt::format("job state of job '{}', not of this job '{}'", s.job_id, opt_.job_id));
  if (s.candidates.size() != agents_.size())
    return Status::InvalidArgument(fmt::format("job state with {} candidates, this plan has {}", s.candidates.size(),
                                               agents_.size()));
  for (size_t n = 0; n < agents_.size(); ++n)
    if (s.candidates[n].name != names_[n] && !opt_.hosts_from_agents)
      return Status::InvalidArgument(
          fmt::format("job state's candidate {} is '{}', this plan's '{}'", n, s.candidates[n].name, names_[n]));
  generation_ = s.generation;
  policy_.Restore(s.budget);
  evictions_.Restore(s.evicted_until);
  if (gather_) gather_->RestoreRecoveryPoint(s.recovery_point, s.worst_at_risk);
  return Status::OK();
}

}  // namespace ds
