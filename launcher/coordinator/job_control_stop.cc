// JobControl and failures, stopping a generation, the end of the
// job, and the deadlines the one timer is armed for (job_control.h).
#include <algorithm>

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "launcher/coordinator/job_control.h"

namespace ds {
namespace {

Failure HostFailure(const std::string& host, const std::string& what, int exit_code) {
  Failure f;
  f.time = std::chrono::system_clock::now();
  f.host = host;
  f.what = what;
  f.exit_code = exit_code;
  return f;
}

}  // namespace

void JobControl::OnAgentClosed(int node, const std::string& reason) {
  const PublishOnReturn publish{*this};
  if (!agents_[node].up()) return;  // lost already, or never registered
  if (!Commanding() && state_ != CoordState::kDone) {
    // Not leading (its lease lost): the agent may have left for a new
    // leader. Judged once this coordinator leads again (JudgeUnjudged).
    unjudged_.push_back({node, agents_[node].registrations, reason});
    liveness_.Unwatch(node);  // no link, no heartbeats: JudgeUnjudged decides
    fleet_->OnAgentAway(node);
    return;
  }
  LoseAgent(node, reason);
  if (state_ == CoordState::kDone) return;
  if (adopting_) return MaybeAdopt();  // one fewer to wait for
  const bool in_generation = std::find(gen_agents_.begin(), gen_agents_.end(), node) != gen_agents_.end();
  if (state_ == CoordState::kStopping) {
    DS_LOG(Info, Coord) << "node " << node << " closed while stopping: " << reason;
    // A survivor's lost connection may have stopped the generation first: the host is the cause.
    if (in_generation) record_.RecordFailure(HostFailure(names_[node], "agent lost: " + reason, 1));
    return MaybeFinishStopping();
  }
  if (!in_generation) {
    if (reshaping_ && reshaping_->Answered(node)) return MaybeFinishReshape();  // its workers were leaving anyway
    Notice(fmt::format("standby {} lost ({})", names_[node], reason));
    return;
  }
  Fail(names_[node], "agent lost: " + reason, 1, /*restartable=*/true);
}

// Lost for good (a rejoin registers a new agent): its link closed, its
// snapshots forgotten, its heartbeats no longer judged; the fleet hears of it
// while the job goes on.
void JobControl::LoseAgent(int node, const std::string& reason) {
  Agent& a = agents_[node];
  // An agent leaving after the job is done (Shutdown, or its own end) is not lost.
  a.MoveTo(state_ == CoordState::kDone ? SlotState::kEnded : SlotState::kLost);
  if (a.link) a.link->Close(reason);
  if (gather_) {
    gather_->Forget(node);
    SendSnapshotPlan();
  }
  liveness_.Unwatch(node);
  slow_links_.Forget(static_cast<uint32_t>(node));
  if (state_ != CoordState::kDone && Commanding()) fleet_->OnAgentLost(node);  // a leader that lost its lease starts nothing
}

void JobControl::Abort(const std::string& host, const std::string& what, int exit_code) {
  const PublishOnReturn publish{*this};
  Fail(host, what, exit_code, /*restartable=*/false);
}

// The user hears of the failure once: in the restart's notice or in the
// summary (a warning here printed it a second time, e.g. a busy --master_port).
void JobControl::Fail(const std::string& host, const std::string& what, int exit_code, bool restartable) {
  DS_LOG(Info, Coord) << host << ": " << what;
  record_.RecordFailure(HostFailure(host, what, exit_code));
  if (state_ == CoordState::kWaitingForAgents) return Finish();
  StopGeneration(fmt::format("{}: {}", host, what), restartable);
}

void JobControl::RequestStop(int signal_number) {
  const PublishOnReturn publish{*this};
  if (state_ == CoordState::kDone) return;
  if (state_ == CoordState::kStopping) {
    DS_LOG(Warn, Coord) << "second signal: not waiting for agents any more";
    return Finish();
  }
  Failure f;
  f.time = std::chrono::system_clock::now();
  f.host = "dslaunch";
  f.signal = signal_number;
  f.what = fmt::format("interrupted by signal {}", signal_number);
  record_.RecordFailure(std::move(f));
  if (state_ == CoordState::kWaitingForAgents) return Finish();
  StopGeneration("interrupted", /*restartable=*/false);
}

void JobControl::StopGeneration(const std::string& why, bool restartable) {
  if (state_ == CoordState::kStopping || state_ == CoordState::kDone) return;
  if (reshaping_) EndReshape(why, restartable);  // a failure while reshaping: the full restart, said why
  else if (restartable && TryReshape(why)) return;
  DS_LOG(Info, Coord) << "generation " << generation_ << ": stopping (" << why << ")";
  state_ = CoordState::kStopping;
  if (gather_) gather_->Abandon();
  restart_after_stop_ = restartable;
  stop_started_ = clock_.Now();
  stop_cursor_ = 0;
  for (size_t i = 0; i < agents_.size(); ++i) {
    if (agents_[i].connected()) agents_[i].SetBusy(true);  // every one confirms, or is lost
    SendTo(static_cast<int>(i), wire::MsgType::kStop, msg::Stop{static_cast<uint32_t>(generation_)}.Encode());
  }
  MaybeFinishStopping();
  Rearm();
}

// While stopping, an agent only ever becomes stopped or gone (a rejoin
// registers stopped), so the agents before stop_cursor_ need no second look:
// O(agents) for the whole stop, not per Stopped.
void JobControl::MaybeFinishStopping() {
  if (state_ != CoordState::kStopping) return;
  while (stop_cursor_ < agents_.size() &&
         (agents_[stop_cursor_].slot != SlotState::kBusy || !agents_[stop_cursor_].connected()))
    ++stop_cursor_;
  if (stop_cursor_ < agents_.size()) return;
  record_.all_stopped_time = clock_.Now();
  if (restart_after_stop_ && policy_.MayRestart(record_, RestartCandidates())) return Restart();
  Finish();
}

void JobControl::Finish() {
  if (state_ == CoordState::kDone) return;
  state_ = CoordState::kDone;
  timer_.Cancel();
  if (gather_) record_.snapshot_summary = gather_->Summary();
  // The per-node form: every node's dslaunch (its agent) exits with the job's status.
  const Bytes shutdown = msg::Shutdown{opt_.hosts_from_agents ? record_.ExitCode() : 0}.Encode();
  for (size_t i = 0; i < agents_.size(); ++i) {
    SendTo(static_cast<int>(i), wire::MsgType::kShutdown, shutdown);
    if (agents_[i].link) agents_[i].link->Close("job finished", /*flush=*/true);
  }
  if (on_done_) on_done_();
}

// --- deadlines -------------------------------------------------------------

void JobControl::OnTimer() {
  const PublishOnReturn publish{*this};
  const auto now = clock_.Now();
  CheckRegisterDeadline(now);
  CheckLastCall(now);
  CheckLiveness(now);
  CheckStopDeadline(now);
  CheckReshapeDeadline(now);
  CheckHang(now);
  Rearm();
}

// A takeover waits no longer than the agents' grace: an agent not back by
// then has ended its workers, and the survivors' workers wait on it.
Clock::time_point JobControl::RegisterDeadline() const {
  double wait = opt_.register_timeout;
  if (adopting_ && opt_.coordinator_grace > 0) wait = std::min(wait, opt_.coordinator_grace);
  return start_time_ + Seconds(wait);
}

void JobControl::CheckRegisterDeadline(Clock::time_point now) {
  if (state_ != CoordState::kWaitingForAgents || now < RegisterDeadline()) return;
  if (adopting_) return Adopted();  // whoever is not back by now is lost to the generation
  if (opt_.start_nodes > 0 && num_registered_ >= static_cast<size_t>(opt_.start_nodes)) return StartOnRegistered();
  std::string missing, joined;
  for (size_t i = 0; i < agents_.size(); ++i) {
    if (!agents_[i].registered()) missing += (missing.empty() ? "" : ", ") + names_[i];
    else joined += fmt::format("{}{} ({})", joined.empty() ? "" : ", ", names_[i], Printable(agents_[i].facts.addr));
  }
  if (!opt_.hosts_from_agents)
    return Abort(missing, fmt::format("agent did not register within {}s", opt_.register_timeout), 1);
  // The per-node form: the other nodes are known only once they joined.
  const size_t need = opt_.start_nodes > 0 ? static_cast<size_t>(opt_.start_nodes) : agents_.size();
  Abort("dslaunch", fmt::format("{} of the {} nodes needed joined within {} s: {}", num_registered_, need,
                                opt_.register_timeout, joined.empty() ? "none" : joined),
        1);
}

// The links that closed while this coordinator did not lead, now that it
// leads again: their agents went looking for a leader because this one was
// silent, so each gets the agents' grace to come back; one that has not
// (nor registered anew) is lost then, as ever.
void JobControl::JudgeUnjudged(Clock::time_point now) {
  const double wait = opt_.coordinator_grace > 0 ? opt_.coordinator_grace : opt_.heartbeat_timeout;
  std::vector<Unjudged> due;
  for (auto it = unjudged_.begin(); it != unjudged_.end();) {
    const Agent& a = agents_[it->node];
    if (a.registrations != it->registration || a.connected()) {
      it = unjudged_.erase(it);  // back
    } else if (it->due == Clock::time_point::max()) {
      (it++)->due = now + Seconds(wait);
    } else if (now >= it->due) {
      due.push_back(std::move(*it));
      it = unjudged_.erase(it);
    } else {
      ++it;
    }
  }
  for (const Unjudged& u : due) OnAgentClosed(u.node, u.reason);
}

// What Liveness found due: agents silent for heartbeat_timeout are lost, the
// others get their Ping when one is due (liveness.h).
void JobControl::CheckLiveness(Clock::time_point now) {
  if (!unjudged_.empty() && Commanding()) JudgeUnjudged(now);
  const Liveness::Due due = liveness_.Wake(now);
  if (due.late_s > 0)
    DS_LOG(Warn, Coord) << "the coordinator did not run for " << due.late_s
                        << " s; agents' silence is judged again once it has read what they sent";
  for (int node : due.silent) {
    if (state_ == CoordState::kDone) continue;
    // Not leading (its lease lost): the silence may be this coordinator's
    // own isolation, and whatever it decided could not be sent anyway. It
    // judges nobody; each agent's silence counts afresh from now.
    if (!Commanding()) {
      liveness_.Watch(node, now);
    } else if (heard_by_etcd_ && heard_by_etcd_() < liveness_.LastSeen(node) + Seconds(opt_.heartbeat_timeout)) {
      liveness_.Recheck(now);  // etcd has not heard this leader since: maybe it is the one cut off
    } else {
      OnAgentClosed(node, fmt::format("no heartbeat for {}s", opt_.heartbeat_timeout));
    }
  }
  if (state_ == CoordState::kDone) return;
  const Bytes ping = msg::Ping{Liveness::Stamp(now), 0}.Encode();
  for (int node : due.ping) SendTo(node, wire::MsgType::kPing, ping);
  if (due.ping.empty() || state_ != CoordState::kRunning) return;
  for (const std::string& line : slow_links_.Judge(names_)) Notice(line);  // once per interval
  MarkSlowForEviction();
}

// An agent that cannot confirm its workers are dead is lost: it takes no part
// in a restart, and the job does not wait for it any longer.
void JobControl::CheckStopDeadline(Clock::time_point now) {
  if (state_ != CoordState::kStopping || now < StopDeadline()) return;
  for (size_t i = 0; i < agents_.size(); ++i) {
    Agent& a = agents_[i];
    if (a.slot != SlotState::kBusy || !a.connected()) continue;
    DS_LOG(Warn, Coord) << names_[i] << ": did not confirm the stop in time";
    LoseAgent(static_cast<int>(i), "did not confirm the stop in time");
  }
  MaybeFinishStopping();
}

Clock::time_point JobControl::StopDeadline() const {
  return stop_started_ + Seconds(opt_.stop_grace + opt_.heartbeat_timeout + 2.0);
}

Clock::time_point JobControl::NextDeadline() const {
  auto next = liveness_.NextDeadline();
  if (state_ == CoordState::kWaitingForAgents)
    next = std::min({next, RegisterDeadline(), last_call_});
  if (state_ == CoordState::kStopping) next = std::min(next, StopDeadline());
  if (reshaping_) next = std::min(next, reshaping_->deadline());
  if (state_ == CoordState::kRunning) next = std::min(next, stacks_.deadline());
  if (state_pending_) next = std::min(next, state_looked_at_ + kStateEvery);
  return next;
}

// The timer is re-armed where a deadline can move earlier (start,
// registration, stop) and when it fires; agents' frames move none.
void JobControl::Rearm() {
  if (state_ == CoordState::kDone) return;
  const auto next = NextDeadline();
  if (next == Clock::time_point::max()) return timer_.Cancel();
  timer_.ArmAt(next, [this] { OnTimer(); });
}

}  // namespace ds
