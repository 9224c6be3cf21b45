// SimAgent: one of dssim's nodes: the real AgentControl (agent/control/agent_control.h)
// on a simulated connection (SimConn) with fake workers (SimWorkers), no
// snapshots and no launch tree. It does what AgentSession does around the
// control, on the io thread instead of poll: connect and authenticate (a
// connection reset or refused before registering is tried again a second
// later, as dsagent's --join-timeout does), send Register, hand every frame
// and worker event to the control, and sleep on one timer until the
// control's NextDeadline. When the control finishes the connection closes
// (the agent's process would exit). Silence() freezes the whole agent (a
// hung node: nothing sent, nothing handled, the connection left open);
// Kill() closes its connection at once (a dead node). What it sees goes to
// a SimAgentObserver. Not thread-safe: the io thread only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "agent/control/agent_control.h"
#include "common/asio.h"
#include "sim/sim_conn.h"
#include "sim/sim_workers.h"

namespace ds::sim {

using SimClock = std::chrono::steady_clock;  // the agents' RealClock
using SimTime = SimClock::time_point;

// What the agents report to the fleet (sim_fleet.h), on the io thread.
class SimAgentObserver {
 public:
  virtual ~SimAgentObserver() = default;
  virtual void Registered(int node) = 0;
  virtual void Received(int node, const Frame& f) = 0;  // before the control handles it
  virtual void Sent(int node, wire::MsgType type, const Bytes& payload) = 0;
  virtual void WorkersStarted(int node, const msg::Assign& m, bool again) = 0;
  virtual void Retried(int node) = 0;
  // The agent is gone: it finished (`exit_code`, an AgentExit; 0 after
  // Shutdown) or its connection ended (`registered`: after Register).
  virtual void Left(int node, int exit_code, bool registered, const std::string& why) = 0;
};

struct SimAgentConfig {
  std::string job_id;
  std::string token;                     // the node's agent token (EnrollAgents)
  asio::ip::tcp::endpoint coordinator;
  asio::ip::address source;              // the loopback address it connects from
  double heartbeat_interval = 1.0;
  double heartbeat_timeout = 5.0;
  int max_attempts = 30;                 // connects before it gives up
};

class SimAgent final : private CoordinatorLink, private NodeSnapshots, private LaunchTreeChildren {
 public:
  // `config` and `observer` must outlive it.
  SimAgent(asio::io_context& io, int node, const SimAgentConfig& config, SimAgentObserver& observer);
  ~SimAgent() override;

  void Connect();
  // Freezes it (a hung node). Returns when it last sent something.
  SimClock::time_point Silence();
  void Kill();
  SimWorkers& workers() { return workers_; }
  bool alive() const { return !frozen_ && !gone_; }

 private:
  // CoordinatorLink
  void Send(wire::MsgType type, const Bytes& payload) override;
  void Close() override;
  bool open() const override { return conn_ && conn_->open(); }
  // NodeSnapshots: off (SnapshotSetup is never sent: dssim's job keeps none).
  Result<SnapshotPlace> Start(const msg::SnapshotSetup&) override { return Status::Unavailable("no snapshots in dssim"); }
  bool on() const override { return false; }
  std::string memory_dir() const override { return ""; }
  void SetTargets(const msg::Replicate&) override {}
  void SetPlan(const msg::SnapshotPlan&) override {}
  void StartFetch(const msg::Fetch&) override {}
  std::vector<std::pair<wire::MsgType, Bytes>> TakeOutgoing() override { return {}; }
  std::string failure() override { return ""; }
  void FinishHandoffs() override {}
  // LaunchTreeChildren: none.
  std::vector<msg::AgentEnded> Start(const msg::StartAgents&) override { return {}; }
  size_t running() const override { return 0; }

  void OnReady();
  void OnFrame(const Frame& f);
  void OnEnd(const std::string& why);
  void OnWorkerExit(const WorkerExit& e);
  // After every event: the end, or the timer at the control's next deadline.
  void Settle();
  void OnTimer();

  asio::io_context& io_;
  int node_;
  const SimAgentConfig& config_;
  SimAgentObserver& observer_;
  std::shared_ptr<SimConn> conn_;
  SimWorkers workers_;
  std::unique_ptr<AgentControl> control_;  // once registered
  asio::steady_timer timer_;
  std::optional<SimClock::time_point> armed_;  // when timer_ fires
  SimClock::time_point last_sent_{};
  int attempts_ = 0;
  bool frozen_ = false;  // Silence() or Kill(): handles nothing more
  bool gone_ = false;    // Left() was reported
};

}  // namespace ds::sim
