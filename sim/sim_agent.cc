#include "sim/sim_agent.h"

#include <unistd.h>

#include <fmt/format.h>

namespace ds::sim {

SimAgent::SimAgent(asio::io_context& io, int node, const SimAgentConfig& config, SimAgentObserver& observer)
    : io_(io), node_(node), config_(config), observer_(observer),
      workers_(
          io, [this](const msg::Assign& m, bool again) { observer_.WorkersStarted(node_, m, again); },
          [this](const WorkerExit& e) { OnWorkerExit(e); },
          [this](const StepBeat& beat) {
            if (!control_ || frozen_) return;
            control_->OnStepBeat(beat);
            Settle();
          }),
      timer_(io) {}

SimAgent::~SimAgent() {
  if (conn_) conn_->Close();
}

void SimAgent::Connect() {
  ++attempts_;
  conn_ = std::make_shared<SimConn>(io_);
  msg::Hello hello;
  hello.role = wire::Role::kAgent;
  hello.name = fmt::format("sim{}", node_);
  hello.job_id = config_.job_id;
  hello.node_index = static_cast<uint32_t>(node_);
  conn_->Start(
      config_.coordinator, config_.source, hello, config_.token, [this] { OnReady(); },
      [this](const Frame& f) { OnFrame(f); }, [this](const std::string& why) { OnEnd(why); });
}

// What AgentSession::Connect does after the handshake: Register, then the
// control runs with its heartbeat timers starting now.
void SimAgent::OnReady() {
  msg::Register r;
  r.node_index = static_cast<uint32_t>(node_);
  r.host = r.hostname = fmt::format("sim{}", node_);
  r.addr = "127.0.0.1";
  r.ifname = "lo";
  r.cpus = 1;
  r.pid = ::getpid();
  r.heartbeat_addr = "127.0.0.1:9";
  Send(wire::MsgType::kRegister, r.Encode());
  AgentControlOptions o{r.host, config_.heartbeat_interval, config_.heartbeat_timeout};
  control_ = std::make_unique<AgentControl>(o, AgentSeams{*this, workers_, *this, *this}, RealClock());
  observer_.Registered(node_);
  Settle();
}

void SimAgent::Send(wire::MsgType type, const Bytes& payload) {
  if (frozen_ || !open()) return;
  conn_->Send(type, payload);
  last_sent_ = SimClock::now();
  observer_.Sent(node_, type, payload);
}

void SimAgent::Close() {
  if (conn_) conn_->Close();
}

void SimAgent::OnFrame(const Frame& f) {
  if (frozen_ || !control_) return;
  observer_.Received(node_, f);
  control_->OnFrame(f);
  Settle();
}

void SimAgent::OnWorkerExit(const WorkerExit& e) {
  if (frozen_ || !control_) return;
  control_->OnWorkerExited(e);
  Settle();
}

// The connection ended without the agent closing it. Before registering it
// is tried again a second later (dsagent: --join-timeout); after, the
// control loses its coordinator.
void SimAgent::OnEnd(const std::string& why) {
  if (frozen_ || gone_) return;
  if (!control_ && attempts_ < config_.max_attempts) {
    observer_.Retried(node_);
    auto retry = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(1));
    retry->async_wait([this, retry](boost::system::error_code ec) {
      if (!ec && !frozen_) Connect();
    });
    return;
  }
  if (!control_) {
    gone_ = true;
    return observer_.Left(node_, -1, false, why);
  }
  control_->OnLinkLost(why);
  Settle();
}

void SimAgent::Settle() {
  if (gone_ || frozen_ || !control_) return;
  if (control_->finished()) {
    gone_ = true;
    timer_.cancel();
    Close();  // the agent's process exits
    const int code = control_->exit_code();
    return observer_.Left(node_, code, true, code == 0 ? "shutdown" : fmt::format("the agent left with exit code {}", code));
  }
  auto next = control_->NextDeadline();
  if (!next || (armed_ && *armed_ <= *next)) return;  // the armed timer comes first and re-arms when it fires
  armed_ = *next;
  timer_.expires_at(*next);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) OnTimer();
  });
}

void SimAgent::OnTimer() {
  armed_.reset();
  if (frozen_ || gone_ || !control_) return;
  control_->OnTick();
  Settle();
}

SimClock::time_point SimAgent::Silence() {
  frozen_ = true;
  timer_.cancel();
  return last_sent_;
}

void SimAgent::Kill() {
  frozen_ = true;
  timer_.cancel();
  if (conn_) conn_->Close();
}

}  // namespace ds::sim
