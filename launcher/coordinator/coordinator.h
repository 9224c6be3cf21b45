// Coordinator: the job's control plane inside dslaunch, on one Boost.Asio
// io_context (single thread). It accepts connections, authenticates them
// (HMAC challenge-response, wire_format.md), serves the key/value store, registers one agent per plan
// node, and drives generations:
//
//   kWaitingForAgents -> kReserving -> kRunning -> kStopping -> kDone
//
// A generation reserves MASTER_PORT on node rank 0 (the agent binds and holds
// it until its workers start), sends Assign to every agent, and ends when all
// workers exit 0, or on the first failure (worker exit != 0, agent lost,
// signal to dslaunch): then every agent is told to Stop and the coordinator
// waits until each confirms (or is lost). Then it finishes, or, after a
// failure (a worker's, a hang, a lost agent) with elastic.max_restarts left
// and at least elastic.min_nodes agents alive, restarts: generation + 1 on
// the surviving nodes, standbys stepping in for lost ones (PlanOnNodes: ranks
// renumbered, WORLD_SIZE shrinks when no standby is left), the store cleared,
// back to kReserving. Workers resume from their newest checkpoint. Standbys
// (hosts beyond elastic.max_nodes) have agents from the start that idle
// until then; losing an idle standby only removes it. With elastic.rejoin a
// lost node's new agent may register again: it idles like a standby and
// takes part from the next restart (no restart is forced for it). With
// elastic.max_host_failures, a host whose workers failed that often sits out
// restarts for elastic.host_cooldown, unless min_nodes needs it.
// Not thread-safe: call only from the io thread (or before run()).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/protocol.h"
#include "launcher/coordinator/frame_conn.h"
#include "launcher/report/job_record.h"
#include "launcher/coordinator/kv_store.h"
#include "launcher/config/plan.h"
#include "launcher/coordinator/store_service.h"

namespace ds {

struct CoordinatorOptions {
  std::string job_id;                 // DSLAUNCH_JOB_ID
  std::string secret;                 // the job secret (agents' HMAC key)
  std::string listen_addr = "127.0.0.1";  // numeric address to listen on
  int listen_port = 0;                // 0 = any free port
  std::string advertise_host;         // host workers/agents use to reach us ("" = listen_addr)
  std::vector<std::string> argv;      // the worker command
  double heartbeat_interval = 1.0;    // seconds between Pings
  double heartbeat_timeout = 5.0;     // an agent silent this long is lost
  double handshake_timeout = 5.0;     // an unauthenticated connection is dropped after this
  double register_timeout = 30.0;     // every agent must register within this after Start()
  double stop_grace = 1.0;            // SIGTERM -> SIGKILL on the nodes
  double hang_timeout = 0.0;          // 0 = off
  int master_port = 0;                // 0 = node 0's agent picks a free port
  // What the user must see (restarts); default: a diagnostic log line.
  std::function<void(const std::string&)> notice;
};

enum class CoordState { kWaitingForAgents, kReserving, kRunning, kStopping, kDone };

class Coordinator {
 public:
  // `plan` and `record` must outlive the coordinator.
  Coordinator(asio::io_context& io, const LaunchPlan& plan, CoordinatorOptions options, JobRecord& record);
  ~Coordinator();

  // Binds and listens. Error: "listen 127.0.0.1:0: <reason>".
  Status Listen();
  // "host:port" agents and store clients connect to (after Listen).
  std::string address() const;
  int port() const;
  // Begins the job: arms the register timeout and the heartbeat timer.
  void Start();
  // Stops the job because of a signal to dslaunch (exit code 128+sig).
  void RequestStop(int signal_number);
  // Ends the job now with a failure that is not a worker's (e.g. an agent
  // process that died before registering).
  void Abort(const std::string& host, const std::string& what, int exit_code);
  // Runs once when the job is over (state kDone) and every agent was told
  // to shut down.
  void OnDone(std::function<void()> cb) { on_done_ = std::move(cb); }
  CoordState state() const { return state_; }
  bool NodeRegistered(int node_index) const;
  // Nodes (candidate indices) whose agent was lost: the launcher may start a
  // new agent there, which rejoins (elastic.rejoin) and idles until a restart.
  std::vector<int> LostNodes() const;
  // The current generation's world size, and restarts so far.
  int world_size() const { return gen_plan_.world_size; }
  int restarts() const { return restarts_; }
  // Number of agent connections still open.
  int OpenAgentConnections() const;

 private:
  struct Agent {
    std::shared_ptr<FrameConn> conn;
    msg::Register facts;
    bool registered = false;
    bool lost = false;
    bool stopped = true;  // confirmed Stopped for the current generation
    std::chrono::steady_clock::time_point last_seen;
    std::chrono::steady_clock::time_point last_ping;
  };
  struct Pending;

  void Accept();
  void OnHandshakeFrame(const std::shared_ptr<Pending>& p, Frame f);
  void OnAgentClosed(int node, const std::string& reason);
  Status HandleAgentMessage(int node, const Frame& f);
  void StartGeneration();
  void SendAssigns();
  void OnWorkerExited(int node, const msg::WorkerExited& m);
  // Records a failure that is not a worker's exit and stops the generation.
  void Fail(const std::string& host, const std::string& what, int exit_code, bool restartable);
  void StopGeneration(const std::string& why, bool restartable);
  void MaybeFinishStopping();
  std::vector<bool> AliveAgents() const;  // by node: registered, not lost, connected
  bool MayRestart();
  void ApplyHostCooldowns(std::vector<bool>& keep);
  void Restart();
  void Notice(const std::string& text);
  void Finish();
  void Tick();
  void SendTo(int node, wire::MsgType type, const Bytes& payload);

  asio::io_context& io_;
  const LaunchPlan& plan_;       // the job's plan
  std::vector<NodePlan> candidates_;  // its nodes, then its standbys: agents_ by index
  LaunchPlan gen_plan_;          // the current generation's plan (survivors, standbys stepped in)
  std::vector<int> gen_agents_;  // gen_plan_ node i runs on agents_[gen_agents_[i]]
  CoordinatorOptions opt_;
  JobRecord& record_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer tick_timer_;
  KvStore store_;
  StoreService store_service_;
  CoordState state_ = CoordState::kWaitingForAgents;
  int generation_ = 0;
  int restarts_ = 0;
  bool restart_after_stop_ = false;  // the generation is stopping because of a failure
  std::chrono::steady_clock::time_point failure_time_;  // the one the last restart followed
  std::map<std::string, int> host_failures_;  // worker failures per host since its last cooldown
  std::map<std::string, std::chrono::steady_clock::time_point> cooldown_until_;
  int master_port_ = 0;
  std::vector<std::unique_ptr<Agent>> agents_;  // by node index
  std::chrono::steady_clock::time_point start_time_;
  std::chrono::steady_clock::time_point stop_started_;
  std::function<void()> on_done_;
};

}  // namespace ds
