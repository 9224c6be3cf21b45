// AgentControl: the coordinator's frames and starting a
// generation (agent_control.h). Stopping, leaving and time are in
// agent_control_stop.cc.
#include "agent/control/agent_control.h"

#include <cstdio>

#include <fmt/format.h>

#include "agent/control/agent_exit.h"
#include "common/log.h"
#include "common/strings.h"
#include "wire/hmac_auth.h"
#include "wire/step_heartbeat.h"

namespace ds {

AgentControl::AgentControl(AgentControlOptions options, AgentSeams seams, const Clock& clock)
    : opt_(std::move(options)), seams_(seams), clock_(clock) {
  last_recv_ = last_ping_ = clock_.Now();
}

bool AgentControl::Enter(AgentPhase to) {
  if (!PhaseTransitionAllowed(phase_, to)) {
    DS_LOG(Debug, Agent) << "refused the move from " << PhaseName(phase_) << " to " << PhaseName(to);
    return false;
  }
  phase_ = to;
  return true;
}

bool AgentControl::Move(Slot& s, WorkerSlotState to) {
  if (!WorkerMoveAllowed(s.state, to)) {
    DS_LOG(Debug, Agent) << "refused rank " << s.rank << "'s move from " << WorkerSlotName(s.state) << " to "
                         << WorkerSlotName(to);
    return false;
  }
  s.state = to;
  return true;
}

void AgentControl::OnFrame(const Frame& f) {
  // Lost: what was still buffered does not count; finished: the loop is over.
  if (!seams_.link.open() || finished()) return;
  // A deposed leader's frame (wire_format.md "Fencing") is dropped before
  // anything, even its Ping: it does not count as the coordinator heard.
  uint64_t token = 0;
  Frame inner;
  if (f.type == wire::MsgType::kFenced) {
    auto m = msg::Fenced::Decode(f.payload);
    if (!m.ok()) return Lost("bad message from the coordinator: " + m.status().message());
    if (static_cast<wire::MsgType>(m->type) == wire::MsgType::kFenced)
      return Lost("bad message from the coordinator: a Fenced frame inside another");
    token = m->token;
    inner = Frame{static_cast<wire::MsgType>(m->type), std::move(m->payload)};
  }
  if (Status st = fencing_.Admit(token, "the coordinator"); !st.ok()) {
    DS_LOG(Warn, Agent) << st.message();
    return;
  }
  grace_until_.reset();  // a leader's frame: a later loss gets the whole grace again
  Dispatch(f.type == wire::MsgType::kFenced ? inner : f);
}

void AgentControl::Dispatch(const Frame& f) {
  last_recv_ = clock_.Now();
  auto bad = [&](const Status& st) { Lost("bad message from the coordinator: " + st.message()); };
  switch (f.type) {
    case wire::MsgType::kPing: {  // a stamped one is answered at once: the coordinator's round trip
      auto m = msg::Ping::Decode(f.payload);
      if (!m.ok()) return bad(m.status());
      if (m->sent_micros != 0) Send(wire::MsgType::kPing, msg::Ping{0, m->sent_micros}.Encode());
      return;
    }
    case wire::MsgType::kReserve: {
      auto m = msg::Reserve::Decode(f.payload);
      return m.ok() ? OnReserve(*m) : bad(m.status());
    }
    case wire::MsgType::kAssign: {
      auto m = msg::Assign::Decode(f.payload);
      return m.ok() ? OnAssign(*m) : bad(m.status());
    }
    case wire::MsgType::kStop: {
      auto m = msg::Stop::Decode(f.payload);
      return m.ok() ? OnStop(*m) : bad(m.status());
    }
    case wire::MsgType::kShutdown: {
      auto m = msg::Shutdown::Decode(f.payload);
      return m.ok() ? OnShutdown(*m) : bad(m.status());
    }
    case wire::MsgType::kSnapshotSetup: {
      auto m = msg::SnapshotSetup::Decode(f.payload);
      return m.ok() ? OnSnapshotSetup(*m) : bad(m.status());
    }
    case wire::MsgType::kReplicate: {
      auto m = msg::Replicate::Decode(f.payload);
      if (!m.ok()) return bad(m.status());
      if (seams_.snapshots.on()) seams_.snapshots.SetTargets(*m);
      return;
    }
    case wire::MsgType::kSnapshotPlan: {
      auto m = msg::SnapshotPlan::Decode(f.payload);
      if (!m.ok()) return bad(m.status());
      if (seams_.snapshots.on()) seams_.snapshots.SetPlan(*m);
      return;
    }
    case wire::MsgType::kFetch: {
      auto m = msg::Fetch::Decode(f.payload);
      return m.ok() ? OnFetch(*m) : bad(m.status());
    }
    case wire::MsgType::kReshape: {
      auto m = msg::Reshape::Decode(f.payload);
      return m.ok() ? OnReshape(*m) : bad(m.status());
    }
    case wire::MsgType::kStartAgents: {
      auto m = msg::StartAgents::Decode(f.payload);
      if (!m.ok()) return bad(m.status());
      for (const msg::AgentEnded& e : seams_.tree.Start(*m)) Send(wire::MsgType::kAgentEnded, e.Encode());
      return;
    }
    case wire::MsgType::kDumpStacks: {
      auto m = msg::DumpStacks::Decode(f.payload);
      return m.ok() ? OnDumpStacks(*m) : bad(m.status());
    }
    case wire::MsgType::kCoordinators: {
      auto m = msg::Coordinators::Decode(f.payload);
      return m.ok() ? OnCoordinators(*m) : bad(m.status());
    }
    default:
      return Lost(fmt::format("unexpected message type {}", static_cast<int>(f.type)));
  }
}

void AgentControl::OnReserve(const msg::Reserve& m) {
  auto held = seams_.workers.HoldPort(m.port);
  msg::Reserved r;
  r.generation = m.generation;
  if (held.ok()) r.port = *held;
  else r.error = held.status().message();
  Send(wire::MsgType::kReserved, r.Encode());
}

void AgentControl::OnAssign(const msg::Assign& m) {
  // A replacement rank of a generation reshaped in place: it loads the save
  // the node is still gathering, so it starts once the gather is done, and
  // beside the workers that stay.
  if (reshape_ && reshape_->gathering && m.generation == reshape_->m.generation) {
    deferred_assign_ = m;
    return;
  }
  const bool beside = m.generation == reshaped_generation_ && m.generation == generation_;
  if (!Enter(AgentPhase::kRunning)) return;  // leaving: no worker starts any more
  if (!beside) {
    slots_.clear();  // the previous generation's workers are all gone (the launcher SIGKILLs any left)
    progress_.Clear();
    summaries_.Clear();
    seams_.workers.KillLeftovers();  // and nothing of theirs is left to meet the new generation
  }
  generation_ = m.generation;
  stop_grace_ = std::chrono::milliseconds(m.stop_grace_ms);
  hang_timeout_ = std::chrono::milliseconds(m.hang_timeout_ms);
  stop_owed_.reset();
  kill_at_.reset();
  std::vector<std::string> tokens;
  for (size_t i = 0; i < m.workers.size(); ++i) tokens.push_back(RandomHex(kStepBeatTokenChars / 2));
  const std::string snapshot_dir = seams_.snapshots.on() ? seams_.snapshots.memory_dir() : "";
  std::vector<WorkerStart> started = beside ? seams_.workers.AddWorkers(m, tokens, snapshot_dir)
                                            : seams_.workers.StartWorkers(m, tokens, snapshot_dir);
  for (size_t i = 0; i < m.workers.size(); ++i) {
    Slot s;
    s.rank = s.beat_rank = m.workers[i].rank;
    s.beat_token = tokens[i];
    const WorkerStart w = i < started.size() ? started[i] : WorkerStart{-1, "dsagent: the worker was not started"};
    if (w.pid < 0) {
      FailToStart(std::move(s), w.error);
      continue;
    }
    s.pid = w.pid;
    s.last_beat = clock_.Now();
    Send(wire::MsgType::kWorkerStarted, msg::WorkerStarted{generation_, s.rank, s.pid}.Encode());
    slots_.push_back(std::move(s));
  }
}

void AgentControl::FailToStart(Slot s, const std::string& why) {
  SendLine(s.rank, 2, why);
  msg::WorkerExited e{generation_, s.rank, 0, 127, 0, 0, 1};
  Send(wire::MsgType::kWorkerExited, e.Encode());
  Move(s, WorkerSlotState::kEnded);
  slots_.push_back(std::move(s));
}

void AgentControl::OnShutdown(const msg::Shutdown& m) {
  // The agents this one started were told too: wait (bounded) for them to
  // end, so that the launcher, waiting for this agent, waits for them.
  if (seams_.tree.running() > 0)
    linger_until_ = clock_.Now() + stop_grace_ + Seconds(opt_.heartbeat_timeout);
  // The job's status where the coordinator gives it (the per-node form), so
  // that every node's dslaunch fails when the job did.
  const int code = m.exit_code != 0 ? m.exit_code : ExitCode(AgentExit::kShutdown);
  Quit(code, "shutdown");
  shut_down_ = phase_ >= AgentPhase::kQuitting && exit_code_ == code;  // this Shutdown is why it leaves
}

void AgentControl::OnSnapshotSetup(const msg::SnapshotSetup& m) {
  msg::SnapshotReady ready;
  auto place = seams_.snapshots.Start(m);
  if (place.ok()) {
    ready.peer_addr = place->peer_addr;
    ready.memory_dir = place->memory_dir;
    DS_LOG(Info, Agent) << "snapshots in " << ready.memory_dir << ", shard server on " << ready.peer_addr;
  } else {
    ready.error = fmt::format("host {}: {}", opt_.host, place.status().message());
  }
  SendSnapshotMessages();  // what the node's disk holds, before Ready lets the coordinator decide
  Send(wire::MsgType::kSnapshotReady, ready.Encode());
}

void AgentControl::OnFetch(const msg::Fetch& m) {
  if (seams_.snapshots.on()) return seams_.snapshots.StartFetch(m);
  Send(wire::MsgType::kFetched,
       msg::Fetched{m.generation, m.step, m.id.set, 0, 0, "snapshots are off on this node"}.Encode());
}

// A hang (the coordinator's HangDetector): every running worker's stacks,
// taken before anything is killed (stack_dump.h).
void AgentControl::OnDumpStacks(const msg::DumpStacks& m) {
  if (m.generation != generation_) return;  // stale: the coordinator moved on
  std::vector<StackTarget> targets;
  for (const Slot& s : slots_)
    if (s.running()) targets.push_back({s.rank, s.pid});
  if (seams_.stacks) return seams_.stacks->Start(m.generation, std::move(targets), std::chrono::milliseconds(m.deadline_ms));
  msg::Stacks none{m.generation, {}};
  for (const StackTarget& t : targets) none.ranks.push_back({t.rank, t.pid, "", "this agent takes no stacks"});
  Send(wire::MsgType::kStacks, none.Encode());
}

void AgentControl::OnStacksTaken(const msg::Stacks& m) {
  if (m.generation == generation_) Send(wire::MsgType::kStacks, m.Encode());
}

void AgentControl::OnSnapshotEvents() { SendSnapshotMessages(); }

void AgentControl::SendSnapshotMessages() {
  if (!seams_.snapshots.on()) return;
  for (auto& [type, payload] : seams_.snapshots.TakeOutgoing()) {
    if (type == wire::MsgType::kFetched && reshape_ && reshape_->gathering) {
      auto f = msg::Fetched::Decode(payload);  // the reshape's gather: answered in its Reshaped
      if (f.ok() && f->generation == reshape_->m.generation) {
        OnReshapeFetched(*f);
        continue;
      }
    }
    Send(type, payload);
  }
  const std::string failed = seams_.snapshots.failure();
  if (failed.empty() || phase_ >= AgentPhase::kQuitting) return;
  // A thread of the agent failed: its state is unknown, so the node leaves
  // the job the clean way (workers stopped, a distinct exit code) and the
  // coordinator carries on without it.
  std::fprintf(stderr, "dsagent %s: snapshots: %s; stopping my workers and leaving the job\n", opt_.host.c_str(),
               Printable(failed).c_str());
  Quit(ExitCode(AgentExit::kInternalError), "snapshots: " + failed);
}

void AgentControl::OnWorkerLine(int rank, int stream, const std::string& line) {
  const int plain = stream & ~msg::kOutputProgress;
  if (plain == stream) progress_.Completed(rank, stream);
  else if (!progress_.Offer(rank, plain, line, clock_.Now())) return;  // kept: sent when due (OnTick)
  SendLine(rank, stream, line);
}

void AgentControl::SendDueProgress(TimePoint now) {
  for (const auto& u : progress_.TakeDue(now)) SendLine(u.rank, u.stream | msg::kOutputProgress, u.text);
}

void AgentControl::SendLine(int rank, int stream, const std::string& line) {
  Send(wire::MsgType::kOutput, msg::Output{generation_, rank, static_cast<uint8_t>(stream), line}.Encode());
}

void AgentControl::OnStepBeat(const StepBeat& beat) {
  const int64_t rank = beat.rank;
  const Bytes token(beat.token.begin(), beat.token.end());
  // A beat counts only with that worker's own token (constant-time compare):
  // anyone else who can reach the heartbeat port can neither arm a healthy
  // worker's hang check nor keep a hung one alive. A worker reshaped in
  // place beats with the RANK it was started with (beat_rank), which
  // another worker may have now.
  Slot* s = nullptr;
  for (auto& c : slots_)
    if (c.running() && c.beat_rank == rank && c.beat_token.size() == kStepBeatTokenChars &&
        MacEquals(Bytes(c.beat_token.begin(), c.beat_token.end()), token))
      s = &c;
  if (!s) {
    DS_LOG(Debug, Hb) << "ignored a step heartbeat for rank " << rank << " with a wrong token";
    return;
  }
  if (s->state == WorkerSlotState::kStarted) Move(*s, WorkerSlotState::kBeating);
  s->last_beat = clock_.Now();
  summaries_.OnBeat(s->rank, beat.step, beat.compute_micros, beat.samples, beat.save_stall_micros, s->last_beat);
  if (beat.HasMetric()) summaries_.OnMetrics(s->rank, beat.step, beat.loss, beat.accuracy);
}

AgentControl::Slot* AgentControl::Find(int rank) {
  for (auto& s : slots_)
    if (s.rank == rank) return &s;
  return nullptr;
}

}  // namespace ds
