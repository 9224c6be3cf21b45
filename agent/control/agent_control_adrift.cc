// AgentControl without a coordinator (coordinator.grace, coordinator
// failover): the workers run on while the agent looks for a new leader;
// what it would have sent waits for that leader (agent_control.h).
#include <cstdio>

#include <fmt/format.h>

#include "agent/control/agent_control.h"
#include "agent/control/agent_exit.h"
#include "common/log.h"

namespace ds {

void AgentControl::Send(wire::MsgType type, const Bytes& payload) {
  if (adrift_) return Hold(type, payload);
  seams_.link.Send(type, payload);
}

bool AgentControl::GoAdrift(const std::string& reason) {
  // A stop, a reshape or the way out under way is finished as before: only
  // a generation that runs (or none) is kept for a new leader.
  if (opt_.coordinator_grace <= 0 || reshape_ || stop_owed_ ||
      (phase_ != AgentPhase::kIdle && phase_ != AgentPhase::kRunning))
    return false;
  const TimePoint now = clock_.Now();
  if (!grace_until_) grace_until_ = now + Seconds(opt_.coordinator_grace);
  if (now >= *grace_until_) return false;
  Adrift a;
  a.from = phase_;
  a.since = now;
  a.next_try = now;  // at once: a leader may be waiting already
  if (!Enter(AgentPhase::kAdrift)) return false;
  adrift_ = std::move(a);
  seams_.workers.ReleasePort();  // a Reserve's port: the new leader reserves afresh
  size_t running = 0;
  for (const Slot& s : slots_) running += s.running();
  std::fprintf(stderr, "dsagent %s: lost the coordinator (%s); my %zu worker(s) run on for up to %.1f s while a "
               "new leader takes over\n", opt_.host.c_str(), reason.c_str(), running,
               std::chrono::duration<double>(*grace_until_ - now).count());
  return true;
}

void AgentControl::Hold(wire::MsgType type, const Bytes& payload) {
  switch (type) {
    case wire::MsgType::kPing:        // the new leader measures its own
    case wire::MsgType::kProgress:    // the summaries keep what is new for the next Ping
    case wire::MsgType::kWorkerHung:  // a hang seen adrift is judged again once a leader listens
    case wire::MsgType::kStacks:
      return;
    case wire::MsgType::kOutput:
      if (adrift_->output_bytes + payload.size() > kHeldOutputBytes) {
        ++adrift_->lines_dropped;
        return;
      }
      adrift_->output_bytes += payload.size();
      break;
    default:
      break;  // a worker's start or end, a child agent's end, the snapshot keeper's news: all of it
  }
  adrift_->held.emplace_back(type, payload);
}

void AgentControl::CheckAdrift(TimePoint now) {
  if (!adrift_) return;
  if (now >= *grace_until_) {
    adrift_.reset();
    std::fprintf(stderr, "dsagent %s: no new coordinator within coordinator.grace (%.1f s); killing my workers\n",
                 opt_.host.c_str(), opt_.coordinator_grace);
    return Quit(ExitCode(AgentExit::kLostCoordinator), "no new coordinator within coordinator.grace");
  }
  if (now < adrift_->next_try) return;
  const std::string address =
      coordinators_.empty() ? "" : coordinators_[next_coordinator_++ % coordinators_.size()];
  if (seams_.link.Reconnect(address)) return Resume(now);
  adrift_->next_try = now + kReconnectEvery;
}

void AgentControl::OnCoordinators(const msg::Coordinators& m) {
  coordinators_.clear();
  for (const std::string& a : m.addresses)
    if (!a.empty()) coordinators_.push_back(a);
  next_coordinator_ = 0;
  seams_.link.KnownCoordinators(coordinators_);
}

void AgentControl::Resume(TimePoint now) {
  Adrift a = std::move(*adrift_);
  adrift_.reset();
  Enter(a.from);
  last_recv_ = last_ping_ = now;
  msg::Resume r;
  r.generation = generation_;
  r.running = a.from == AgentPhase::kRunning ? 1 : 0;
  r.token_seen = fencing_.newest();
  size_t running = 0;
  if (r.running)
    for (const Slot& s : slots_)
      if (s.pid > 0) {
        r.workers.push_back({s.rank, s.pid});
        running += s.running();
      }
  Send(wire::MsgType::kResume, r.Encode());
  for (const auto& [type, payload] : a.held) Send(type, payload);
  std::fprintf(stderr, "dsagent %s: registered with a new coordinator after %.2f s adrift; %zu worker(s) kept "
               "running, %zu frame(s) handed over%s\n", opt_.host.c_str(),
               std::chrono::duration<double>(now - a.since).count(), running, a.held.size(),
               a.lines_dropped > 0 ? fmt::format(", {} output line(s) lost (over {} MiB held)", a.lines_dropped,
                                                 kHeldOutputBytes >> 20).c_str()
                                   : "");
  Settle();
}

}  // namespace ds
