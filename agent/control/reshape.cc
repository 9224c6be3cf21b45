// AgentControl and in-place recovery (reshape) (agent_control.h;
// checkpoint_format.md "In-place recovery"). A Reshape keeps the node's
// workers: they take their new ranks at once (their lines and ends carry the
// new generation), the snapshot keeper gathers the save's shards the node
// lacks (the Fetch path), then each worker gets WorkerReshape over its
// control channel; Reshaped answers the coordinator once every worker has
// confirmed, failed, or the deadline passed. An Assign of that generation
// (a replacement rank) starts beside them, once the gather is done.
#include <fmt/format.h>

#include "agent/control/agent_control.h"
#include "common/log.h"
#include "common/strings.h"

namespace ds {

namespace {
std::string Ms(uint32_t ms) { return ms % 1000 == 0 ? fmt::format("{} s", ms / 1000) : fmt::format("{} ms", ms); }
}  // namespace

void AgentControl::OnReshape(const msg::Reshape& m) {
  const TimePoint now = clock_.Now();
  auto refuse = [&](const std::string& why) {
    Send(wire::MsgType::kReshaped, msg::Reshaped{m.generation, {}, fmt::format("host {}: {}", opt_.host, why), 0}.Encode());
  };
  if (phase_ != AgentPhase::kIdle && phase_ != AgentPhase::kRunning)
    return refuse(fmt::format("the node is {}", PhaseName(phase_)));
  if (reshape_) return refuse(fmt::format("generation {} is still being reshaped", reshape_->m.generation));
  if (!seams_.snapshots.on()) return refuse("snapshots are off on this node");
  Reshaping r;
  r.m = m;
  r.received = now;
  r.deadline = now + std::chrono::milliseconds(m.deadline_ms);
  r.verdicts.resize(m.moves.size());
  r.answered.assign(m.moves.size(), false);
  std::vector<Slot> kept;  // the running workers, renumbered; the others were the old generation's
  for (size_t i = 0; i < m.moves.size(); ++i) {
    const msg::RankMove& mv = m.moves[i];
    r.verdicts[i].rank = mv.new_rank;
    Slot* s = Find(mv.old_rank);
    if (!s || !s->running() || s->state == WorkerSlotState::kKilledForHang) {
      r.verdicts[i].why = s && s->running() ? "was killed for its silence" : "had already ended";
      r.answered[i] = true;
      continue;
    }
    if (mv.new_rank < 0) {  // not in the new world: stopped (Renumber), as asked
      r.verdicts[i].ok = 1;
      r.answered[i] = true;
      continue;
    }
    Slot moved = *s;
    moved.rank = mv.new_rank;
    // No hang check until it beats in the new generation.
    if (moved.state != WorkerSlotState::kStarted) Move(moved, WorkerSlotState::kStarted);
    moved.last_beat = now;
    kept.push_back(std::move(moved));
  }
  slots_ = std::move(kept);
  seams_.workers.Renumber(m.moves);
  progress_.Clear();
  summaries_.Clear();
  generation_ = m.generation;
  reshaped_generation_ = m.generation;
  reshape_ = std::move(r);
  DS_LOG(Info, Agent) << "generation " << m.generation << ": reshaping in place to step " << m.step << ", "
                      << m.moves.size() << " worker(s) here";
  seams_.snapshots.StartFetch(msg::Fetch{m.generation, m.step, m.id, m.sources});
}

void AgentControl::OnReshapeFetched(const msg::Fetched& f) {
  if (!f.error.empty()) {
    reshape_->error = fmt::format("host {} could not gather step {}: {}", opt_.host, f.step, f.error);
    deferred_assign_.reset();  // the coordinator falls back: no replacement starts
    return MaybeFinishReshape(false);
  }
  reshape_->gathering = false;
  TellWorkers();
  StartDeferredAssign();
}

void AgentControl::TellWorkers() {
  const msg::Reshape& m = reshape_->m;
  for (size_t i = 0; i < m.moves.size(); ++i) {
    if (reshape_->answered[i]) continue;
    const int rank = m.moves[i].new_rank;
    Status st = seams_.workers.SendControl(
        rank, msg::WorkerReshape{m.generation, rank, m.world, m.step, m.id.set, m.store_addr, m.store_token});
    if (!st.ok()) Verdict(rank, false, "could not be told: " + st.message());
  }
  MaybeFinishReshape(false);
}

void AgentControl::OnWorkerControl(int rank, const Frame& f) {
  if (f.type != wire::MsgType::kWorkerReshaped) {
    DS_LOG(Info, Agent) << "rank " << rank << " sent message type " << static_cast<int>(f.type)
                        << " on its control channel; ignored";
    return;
  }
  auto m = msg::WorkerReshaped::Decode(f.payload);
  if (!m.ok()) return Verdict(rank, false, "bad WorkerReshaped: " + m.status().message());
  if (!reshape_ || reshape_->gathering || m->generation != reshape_->m.generation) return;  // stale
  Verdict(rank, m->ok != 0, "refused: " + Printable(m->why));
}

void AgentControl::Verdict(int rank, bool ok, const std::string& why) {
  if (!reshape_) return;
  for (size_t i = 0; i < reshape_->m.moves.size(); ++i) {
    if (reshape_->m.moves[i].new_rank != rank || reshape_->answered[i]) continue;
    reshape_->answered[i] = true;
    reshape_->verdicts[i].ok = ok ? 1 : 0;
    reshape_->verdicts[i].why = ok ? "" : why;
  }
  MaybeFinishReshape(false);
}

// Each verdict's `why` completes "<host> rank <r> ...", the coordinator's
// fallback line. Answers once every worker did (or the node failed), or at the deadline
// with what is missing named.
void AgentControl::MaybeFinishReshape(bool deadline_passed) {
  if (!reshape_) return;
  Reshaping& r = *reshape_;
  bool all = !r.gathering;
  for (bool a : r.answered) all = all && a;
  if (!all && r.error.empty() && !deadline_passed) return;
  const std::string late = fmt::format("did not confirm within {}", Ms(r.m.deadline_ms));
  for (size_t i = 0; i < r.verdicts.size(); ++i)
    if (!r.answered[i]) r.verdicts[i].why = r.gathering ? "was not told: its node was still gathering the save" : late;
  if (r.gathering && r.error.empty())
    r.error = fmt::format("host {} could not gather step {} within {}", opt_.host, r.m.step, Ms(r.m.deadline_ms));
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(clock_.Now() - r.received).count();
  msg::Reshaped out{r.m.generation, std::move(r.verdicts), r.error, static_cast<uint32_t>(micros)};
  if (!r.error.empty()) deferred_assign_.reset();
  reshape_.reset();
  Send(wire::MsgType::kReshaped, out.Encode());
}

void AgentControl::StartDeferredAssign() {
  if (!deferred_assign_) return;
  msg::Assign a = std::move(*deferred_assign_);
  deferred_assign_.reset();
  OnAssign(a);
}

}  // namespace ds
