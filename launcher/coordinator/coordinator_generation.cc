// Coordinator, second half: the generation state machine, agent messages,
// heartbeats and the end of the job (coordinator.h); restarts are in
// coordinator_restart.cc.
#include <algorithm>

#include <fmt/format.h>

#include "common/hmac_auth.h"
#include "common/log.h"
#include "launcher/coordinator/assign_builder.h"
#include "launcher/coordinator/coordinator.h"

namespace ds {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
milliseconds Ms(double seconds) { return milliseconds(static_cast<int64_t>(seconds * 1000)); }
constexpr milliseconds kTick{50};
}  // namespace

void Coordinator::SendTo(int node, wire::MsgType type, const Bytes& payload) {
  Agent& a = *agents_[node];
  if (a.conn && !a.conn->closed()) a.conn->Send(type, payload);
}

Status Coordinator::HandleAgentMessage(int node, const Frame& f) {
  switch (f.type) {
    case wire::MsgType::kPing:
      return Status::OK();
    case wire::MsgType::kReserved: {
      DS_ASSIGN_OR_RETURN(msg::Reserved m, msg::Reserved::Decode(f.payload));
      if (node != gen_agents_[0] || state_ != CoordState::kReserving ||
          static_cast<int>(m.generation) != generation_)
        return Status::OK();  // stale
      if (!m.error.empty()) {
        Abort(gen_plan_.nodes[0].host.name, "MASTER_PORT reservation failed: " + m.error, 1);
        return Status::OK();
      }
      master_port_ = static_cast<int>(m.port);
      SendAssigns();
      return Status::OK();
    }
    case wire::MsgType::kWorkerStarted: {
      DS_ASSIGN_OR_RETURN(msg::WorkerStarted m, msg::WorkerStarted::Decode(f.payload));
      if (static_cast<int>(m.generation) != generation_) return Status::OK();
      record_.OnStarted(m.rank, m.pid);
      if (record_.num_started() == gen_plan_.world_size) {
        DS_LOG(Info, Coord) << "all " << gen_plan_.world_size << " workers running after "
                            << std::chrono::duration<double, std::milli>(Clock::now() - start_time_).count()
                            << " ms";
        if (restarts_ > 0)
          Notice(fmt::format("generation {}: all {} workers running, {:.3f} s after the failure", generation_,
                             gen_plan_.world_size,
                             std::chrono::duration<double>(Clock::now() - failure_time_).count()));
      }
      return Status::OK();
    }
    case wire::MsgType::kOutput: {
      DS_ASSIGN_OR_RETURN(msg::Output m, msg::Output::Decode(f.payload));
      record_.OnOutput(m.rank, m.stream, m.line);
      return Status::OK();
    }
    case wire::MsgType::kWorkerExited: {
      DS_ASSIGN_OR_RETURN(msg::WorkerExited m, msg::WorkerExited::Decode(f.payload));
      if (static_cast<int>(m.generation) == generation_) OnWorkerExited(node, m);
      return Status::OK();
    }
    case wire::MsgType::kStopped: {
      DS_ASSIGN_OR_RETURN(msg::Stopped m, msg::Stopped::Decode(f.payload));
      if (static_cast<int>(m.generation) == generation_) agents_[node]->stopped = true;
      MaybeFinishStopping();
      return Status::OK();
    }
    default:
      return Status::InvalidArgument(fmt::format("unexpected message type {} from an agent",
                                                 static_cast<int>(f.type)));
  }
}

void Coordinator::StartGeneration() {
  state_ = CoordState::kReserving;
  DS_LOG(Info, Coord) << "generation " << generation_ << ": reserving MASTER_PORT on "
                      << gen_plan_.nodes[0].host.name;
  SendTo(gen_agents_[0], wire::MsgType::kReserve,
         msg::Reserve{static_cast<uint32_t>(generation_), static_cast<uint32_t>(opt_.master_port)}.Encode());
}

void Coordinator::SendAssigns() {
  state_ = CoordState::kRunning;
  std::string master_addr = !plan_.job.network.master_addr.empty()
                                ? plan_.job.network.master_addr
                                : agents_[gen_agents_[0]]->facts.addr;
  AssignContext ctx;
  ctx.job_id = opt_.job_id;
  ctx.generation = generation_;
  ctx.restart_count = restarts_;
  ctx.master_addr = master_addr;
  ctx.master_port = master_port_;
  ctx.store_addr = address();
  ctx.store_token = StoreToken(opt_.secret, opt_.job_id, generation_);
  ctx.argv = opt_.argv;
  ctx.stop_grace = opt_.stop_grace;
  ctx.hang_timeout = opt_.hang_timeout;
  for (size_t i = 0; i < gen_agents_.size(); ++i) {
    const int agent = gen_agents_[i];
    msg::Assign a = BuildAssign(gen_plan_, static_cast<int>(i), agents_[agent]->facts, ctx);
    for (const auto& w : a.workers) record_.OnAssigned(w.rank, agent, gen_plan_.nodes[i].host.name);
    agents_[agent]->stopped = a.workers.empty();
    SendTo(agent, wire::MsgType::kAssign, a.Encode());
  }
  DS_LOG(Info, Coord) << "generation " << generation_ << ": assigned " << gen_plan_.world_size
                      << " workers, MASTER_ADDR=" << master_addr << " MASTER_PORT=" << master_port_;
}

void Coordinator::OnWorkerExited(int node, const msg::WorkerExited& m) {
  (void)node;
  bool failed = record_.OnExited(m.rank, m.pid, m.exit_code, m.signal, m.hung != 0);
  if (state_ != CoordState::kRunning) return;
  if (failed) {
    StopGeneration(fmt::format("rank {} failed", m.rank), /*restartable=*/true);
  } else if (record_.AllExitedOk()) {
    DS_LOG(Info, Coord) << "every worker exited 0";
    Finish();
  }
}

void Coordinator::StopGeneration(const std::string& why, bool restartable) {
  if (state_ == CoordState::kStopping || state_ == CoordState::kDone) return;
  DS_LOG(Info, Coord) << "generation " << generation_ << ": stopping (" << why << ")";
  state_ = CoordState::kStopping;
  restart_after_stop_ = restartable;
  stop_started_ = Clock::now();
  for (size_t i = 0; i < agents_.size(); ++i) {
    Agent& a = *agents_[i];
    a.stopped = !a.conn || a.conn->closed();
    SendTo(static_cast<int>(i), wire::MsgType::kStop, msg::Stop{static_cast<uint32_t>(generation_)}.Encode());
  }
  MaybeFinishStopping();
}

void Coordinator::MaybeFinishStopping() {
  if (state_ != CoordState::kStopping) return;
  for (const auto& a : agents_)
    if (!a->stopped && a->conn && !a->conn->closed()) return;
  record_.all_stopped_time = Clock::now();
  if (restart_after_stop_ && MayRestart()) return Restart();
  Finish();
}

void Coordinator::Finish() {
  if (state_ == CoordState::kDone) return;
  state_ = CoordState::kDone;
  boost::system::error_code ec;
  acceptor_.close(ec);
  tick_timer_.cancel();
  for (size_t i = 0; i < agents_.size(); ++i) {
    SendTo(static_cast<int>(i), wire::MsgType::kShutdown, msg::Shutdown{}.Encode());
    if (agents_[i]->conn) agents_[i]->conn->Close("job finished", /*flush=*/true);
  }
  if (on_done_) asio::post(io_, on_done_);
}

void Coordinator::OnAgentClosed(int node, const std::string& reason) {
  Agent& a = *agents_[node];
  if (a.lost) return;
  a.lost = true;
  if (a.conn) a.conn->Close(reason);
  if (state_ == CoordState::kDone) return;
  if (state_ == CoordState::kStopping) {
    DS_LOG(Info, Coord) << "node " << node << " closed while stopping: " << reason;
    return MaybeFinishStopping();
  }
  if (std::find(gen_agents_.begin(), gen_agents_.end(), node) == gen_agents_.end()) {
    Notice(fmt::format("standby {} lost ({})", candidates_[node].host.name, reason));
    return;
  }
  Fail(candidates_[node].host.name, "agent lost: " + reason, 1, /*restartable=*/true);
}

void Coordinator::Abort(const std::string& host, const std::string& what, int exit_code) {
  Fail(host, what, exit_code, /*restartable=*/false);
}

void Coordinator::Fail(const std::string& host, const std::string& what, int exit_code,
                       bool restartable) {
  DS_LOG(Warn, Coord) << host << ": " << what;
  Failure f;
  f.time = std::chrono::system_clock::now();
  f.host = host;
  f.what = what;
  f.exit_code = exit_code;
  record_.RecordFailure(std::move(f));
  if (state_ == CoordState::kWaitingForAgents) return Finish();
  StopGeneration(what, restartable);
}

void Coordinator::RequestStop(int signal_number) {
  if (state_ == CoordState::kStopping || state_ == CoordState::kDone) {
    if (state_ == CoordState::kStopping) {
      DS_LOG(Warn, Coord) << "second signal: not waiting for agents any more";
      Finish();
    }
    return;
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

void Coordinator::Tick() {
  if (state_ == CoordState::kDone) return;
  auto now = Clock::now();
  if (state_ == CoordState::kWaitingForAgents && now - start_time_ > Ms(opt_.register_timeout)) {
    std::string missing;
    for (size_t i = 0; i < agents_.size(); ++i)
      if (!agents_[i]->registered) missing += (missing.empty() ? "" : ", ") + candidates_[i].host.name;
    Abort(missing, fmt::format("agent did not register within {}s", opt_.register_timeout), 1);
    return;
  }
  for (size_t i = 0; i < agents_.size(); ++i) {
    Agent& a = *agents_[i];
    if (!a.registered || a.lost || !a.conn) continue;
    if (now - a.last_seen > Ms(opt_.heartbeat_timeout)) {
      OnAgentClosed(static_cast<int>(i), fmt::format("no heartbeat for {}s", opt_.heartbeat_timeout));
      if (state_ == CoordState::kDone) return;
      continue;
    }
    if (now - a.last_ping >= Ms(opt_.heartbeat_interval)) {
      a.last_ping = now;
      SendTo(static_cast<int>(i), wire::MsgType::kPing, msg::Ping{}.Encode());
    }
  }
  if (state_ == CoordState::kStopping &&
      now - stop_started_ > Ms(opt_.stop_grace + opt_.heartbeat_timeout + 2.0)) {
    // An agent that cannot confirm its workers are dead is lost: it takes no
    // part in a restart, and the job does not wait for it any longer.
    for (size_t i = 0; i < agents_.size(); ++i) {
      Agent& a = *agents_[i];
      if (a.stopped || a.lost || !a.conn || a.conn->closed()) continue;
      DS_LOG(Warn, Coord) << candidates_[i].host.name << ": did not confirm the stop in time";
      a.lost = true;
      a.conn->Close("did not confirm the stop in time");
    }
    MaybeFinishStopping();
    if (state_ == CoordState::kDone) return;
  }
  tick_timer_.expires_after(kTick);
  tick_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) Tick();
  });
}

}  // namespace ds
