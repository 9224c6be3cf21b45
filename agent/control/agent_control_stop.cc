// AgentControl and stopping: workers ending, stopping a generation, leaving
// the job, and time (the Ping, the coordinator's silence, SIGKILL after the
// grace, hung workers). agent_control.h.
#include <signal.h>

#include <cstdio>

#include <fmt/format.h>

#include "agent/control/agent_control.h"
#include "agent/control/agent_exit.h"
#include "common/log.h"

namespace ds {

void AgentControl::OnWorkerExited(const WorkerExit& e) {
  Slot* s = Find(e.rank);
  if (!s || !s->running()) return;
  const bool hung = s->state == WorkerSlotState::kKilledForHang;
  Move(*s, WorkerSlotState::kEnded);
  // What its last beats said goes first: a run shorter than a Ping, or
  // the loss of its last step, is not lost with the worker.
  if (phase_ == AgentPhase::kRunning) {
    msg::Progress p{generation_, summaries_.TakeChanged(clock_.Now())};
    if (!p.ranks.empty()) Send(wire::MsgType::kProgress, p.Encode());
  }
  msg::WorkerExited m;
  m.generation = generation_;
  m.rank = e.rank;
  m.pid = e.pid;
  m.exit_code = e.exit_code;
  m.signal = e.signal;
  m.hung = hung ? 1 : 0;
  if (e.error && (e.exit_code != 0 || e.signal != 0)) {
    m.error_message = e.error->message;
    m.error_trace = e.error->traceback;
  }
  Send(wire::MsgType::kWorkerExited, m.Encode());
  DS_LOG(Info, Proc) << "rank " << e.rank << " pid " << e.pid << " exited (code " << e.exit_code << ", signal "
                     << e.signal << ")";
  // It cannot confirm the reshape any more; one that had finished training
  // (exit 0) has nothing to confirm.
  if (reshape_)
    Verdict(e.rank, e.signal == 0 && e.exit_code == 0,
            e.signal != 0 ? fmt::format("was killed by signal {}", e.signal)
                          : fmt::format("exited with code {}", e.exit_code));
  Settle();
}

void AgentControl::OnChildEnded(const msg::AgentEnded& e) {
  Send(wire::MsgType::kAgentEnded, e.Encode());
  Settle();
}

void AgentControl::OnStop(const msg::Stop& m) {
  // An older generation's is stale; a newer one's is the coordinator's
  // fallback from a reshape this node refused or never saw: it stops all.
  if (m.generation < generation_ && !slots_.empty()) return;
  if (phase_ >= AgentPhase::kLingering) return;               // its workers are gone, and so is this agent
  generation_ = m.generation;
  stop_owed_ = m.generation;
  reshape_.reset();  // the coordinator gave up on it (or never began): nothing is owed
  deferred_assign_.reset();
  seams_.workers.ReleasePort();
  if (phase_ != AgentPhase::kQuitting && phase_ != AgentPhase::kStopping) Enter(AgentPhase::kStopping);
  BeginStop();
}

// SIGTERM once per stop: a second Stop, or leaving while stopping, waits for
// the same SIGKILL deadline instead of signalling again.
void AgentControl::BeginStop() {
  if (!kill_at_ && !AllEnded()) {
    SignalRunning(SIGTERM);
    kill_at_ = clock_.Now() + stop_grace_;
  }
  Settle();  // nothing to wait for: Stopped / the end right away
}

void AgentControl::SignalRunning(int sig) {
  for (const auto& s : slots_)
    if (s.running()) seams_.workers.SignalGroup(s.rank, sig);
}

void AgentControl::OnLinkLost(const std::string& reason) { Lost(reason); }

void AgentControl::Lost(const std::string& reason) {
  if (!seams_.link.open()) return;
  seams_.link.Close();
  if (shut_down_) return;  // told to shut down: the close is expected
  if (GoAdrift(reason)) return;
  std::fprintf(stderr, "dsagent %s: lost the coordinator (%s); killing my workers\n", opt_.host.c_str(),
               reason.c_str());
  Quit(ExitCode(AgentExit::kLostCoordinator), reason);
}

void AgentControl::Quit(int exit_code, const std::string& why) {
  if (!Enter(AgentPhase::kQuitting)) return;  // already leaving
  adrift_.reset();  // nothing is held for a leader any more
  DS_LOG(Info, Agent) << "quitting: " << why;
  exit_code_ = exit_code;
  seams_.workers.ReleasePort();
  BeginStop();
}

void AgentControl::OnTerminationSignal(int sig) {
  if (phase_ >= AgentPhase::kQuitting) return SignalRunning(SIGKILL);  // the second one: no more grace
  Quit(SignalExitCode(sig), fmt::format("signal {}", sig));
}

bool AgentControl::AllEnded() const {
  for (const auto& s : slots_)
    if (s.running()) return false;
  return true;
}

void AgentControl::Settle() {
  if (phase_ == AgentPhase::kLingering && !Lingers(clock_.Now())) Enter(AgentPhase::kFinished);
  if (phase_ != AgentPhase::kStopping && phase_ != AgentPhase::kQuitting) return;
  if (!AllEnded()) return;
  kill_at_.reset();
  // The generation is over: its leftovers (daemons, setsid'd or double-forked
  // children outside the workers' groups) go too, before Stopped says so.
  if (int n = seams_.workers.KillLeftovers(); n > 0)
    DS_LOG(Info, Proc) << "killed " << n << " leftover process(es) of generation " << generation_;
  if (stop_owed_) {
    Send(wire::MsgType::kStopped, msg::Stopped{*stop_owed_}.Encode());
    stop_owed_.reset();
    slots_.clear();
  }
  if (phase_ == AgentPhase::kStopping) {
    Enter(AgentPhase::kIdle);
    return;
  }
  Leave();
}

void AgentControl::Leave() {
  if (seams_.snapshots.on()) {  // the last handoffs reach the node's disk before the agent goes
    seams_.snapshots.FinishHandoffs();
    SendSnapshotMessages();
  }
  Enter(Lingers(clock_.Now()) ? AgentPhase::kLingering : AgentPhase::kFinished);
}

bool AgentControl::Lingers(TimePoint now) const {
  return linger_until_ && seams_.tree.running() > 0 && now < *linger_until_;
}

void AgentControl::OnTick() {
  const TimePoint now = clock_.Now();
  if (kill_at_ && now >= *kill_at_) {
    kill_at_.reset();
    SignalRunning(SIGKILL);
  }
  if (phase_ == AgentPhase::kRunning) CheckHangs(now);
  if (reshape_ && now >= reshape_->deadline) MaybeFinishReshape(true);
  SendDueProgress(now);
  CheckCoordinator(now);
  CheckAdrift(now);
  Settle();
}

// A worker silent for hang_timeout: the coordinator hears of it first and
// takes every rank's stacks before it stops the generation; only when no
// stop came within kHangStopGrace (or no coordinator listens) is the worker
// killed here.
void AgentControl::CheckHangs(TimePoint now) {
  if (hang_timeout_.count() <= 0) return;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(hang_timeout_).count();
  for (auto& s : slots_) {
    const bool judged = s.state == WorkerSlotState::kBeating || s.state == WorkerSlotState::kHangSaid;
    if (!judged || now - s.last_beat < hang_timeout_) continue;
    if (s.state == WorkerSlotState::kBeating && seams_.link.open()) {
      Move(s, WorkerSlotState::kHangSaid);
      s.hang_kill_at = now + kHangStopGrace;
      SendLine(s.rank, 2, fmt::format("dsagent: rank {} made no step for {} ms; every rank's stacks are taken "
                                      "before the job is stopped", s.rank, ms));
      Send(wire::MsgType::kWorkerHung, msg::WorkerHung{generation_, s.rank, static_cast<uint32_t>(ms)}.Encode());
      continue;
    }
    if (s.state == WorkerSlotState::kHangSaid && now < s.hang_kill_at) continue;
    Move(s, WorkerSlotState::kKilledForHang);
    SendLine(s.rank, 2, fmt::format("dsagent: rank {} made no step for {} ms; killing it", s.rank, ms));
    seams_.workers.SignalGroup(s.rank, SIGKILL);
  }
}

void AgentControl::CheckCoordinator(TimePoint now) {
  if (!seams_.link.open()) return;
  if (now - last_recv_ >= Seconds(opt_.heartbeat_timeout)) return Lost(fmt::format("no message for {}s", opt_.heartbeat_timeout));
  if (now - last_ping_ >= Seconds(opt_.heartbeat_interval)) {
    last_ping_ = now;
    Send(wire::MsgType::kPing, msg::Ping{}.Encode());
    if (phase_ != AgentPhase::kRunning) return;
    msg::Progress p{generation_, summaries_.TakeChanged(now)};
    if (!p.ranks.empty()) Send(wire::MsgType::kProgress, p.Encode());
  }
}

std::optional<AgentControl::TimePoint> AgentControl::NextDeadline() const {
  std::optional<TimePoint> next;
  auto consider = [&](TimePoint t) {
    if (!next || t < *next) next = t;
  };
  if (kill_at_) consider(*kill_at_);
  if (reshape_) consider(reshape_->deadline);
  if (phase_ == AgentPhase::kRunning && hang_timeout_.count() > 0) {
    for (const auto& s : slots_)
      if (s.state == WorkerSlotState::kBeating) consider(s.last_beat + hang_timeout_);
      else if (s.state == WorkerSlotState::kHangSaid) consider(s.hang_kill_at);
  }
  if (phase_ == AgentPhase::kLingering && linger_until_) consider(*linger_until_);
  if (auto p = progress_.NextDeadline()) consider(*p);
  if (adrift_) {
    consider(*grace_until_);
    consider(adrift_->next_try);
  }
  if (seams_.link.open()) {
    consider(last_recv_ + Seconds(opt_.heartbeat_timeout));
    consider(last_ping_ + Seconds(opt_.heartbeat_interval));
  }
  return next;
}

}  // namespace ds
