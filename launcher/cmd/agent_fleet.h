// AgentFleet: the dsagent processes of one job, as a Spawner started them.
// It waits on each agent's exit (AgentHandle::exit_fd) instead of asking
// "still running?" on a timer: an agent that ends before registering fails
// the job; with elastic.rejoin, a node the coordinator lost gets a new agent
// 2 s later, then 4, 8, ... up to 30 s apart until one registers (each
// attempt on its own thread: an SSH connect may take connect_timeout); at the
// end it gives the agents a grace period to exit on their own, terminates the
// rest and stops the io_context.
// Not thread-safe: the io thread only (the start and rejoin threads post back
// to it).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "common/clock.h"
#include "launcher/coordinator/coordinator.h"
#include "launcher/spawn/spawner.h"

namespace ds {

class AgentFleet {
 public:
  // `coord` and `spawner` must outlive the fleet; `specs` are by node index;
  // `notice` shows the user a line (a rejoin attempt that failed).
  // `fixed_token` (the per-node form's derived key) replaces the fresh token
  // of every start, and a lost node is enrolled with it again (its node
  // starts its own new agent).
  AgentFleet(asio::io_context& io, Coordinator& coord, Spawner& spawner, std::vector<AgentSpec> specs,
             std::function<void(const std::string&)> notice, std::string fixed_token = "");
  ~AgentFleet();  // joins a rejoin attempt still running

  // Starts every agent (in parallel, through the spawner) with a fresh agent
  // token on its stdin (Coordinator::EnrollAgents; the job secret stays in
  // dslaunch); a node whose agent cannot be started aborts the job, naming
  // the host and the reason. Returns at once: the spawner runs on a thread
  // of its own (SSH sessions at fan-out N, thousands of local processes take
  // seconds) while the io loop goes on, so the coordinator registers agents
  // as they come; the handles come back to the io thread (started()).
  void Start();
  // Start()'s spawner has returned and its handles are watched.
  bool started() const { return started_; }
  // The coordinator lost `node`'s agent: its handle no longer holds the
  // drain (a step launcher may report a dead node's task late or never).
  void MarkLost(int node);
  // The coordinator lost `node`'s agent: try a new one (elastic.rejoin).
  void Rejoin(int node);
  // The job is over: wait up to `grace` for every agent to exit, terminate
  // what is left, then stop the io_context.
  void Drain(Clock::duration grace);

 private:
  struct Member {
    std::unique_ptr<AgentHandle> handle;  // null if it failed to start
    std::unique_ptr<asio::posix::stream_descriptor> exit_watch;
    int incarnation = 0;  // bumps when a rejoin replaces the handle
    bool lost = false;    // MarkLost, until a rejoin replaces the handle
  };

  void Started();
  void Watch(int node);
  void OnExited(int node);
  void ArmRejoinTimer();
  void TryRejoins();
  void Rejoined(int node, Result<std::unique_ptr<AgentHandle>> started);
  bool AnyRunning() const;
  void TerminateAllAndStop();

  asio::io_context& io_;
  Coordinator& coord_;
  Spawner& spawner_;
  std::vector<AgentSpec> specs_;
  std::function<void(const std::string&)> notice_;
  std::string fixed_token_;
  std::vector<Member> members_;  // by node index
  // elastic.rejoin: when each lost node is tried next, and its backoff.
  std::map<int, Clock::time_point> next_try_;
  std::map<int, double> backoff_s_;
  asio::steady_timer rejoin_timer_;
  std::thread start_thread_;     // Start()'s spawner
  std::mutex start_mu_;
  std::vector<Result<std::unique_ptr<AgentHandle>>> start_results_;  // guarded by start_mu_, until Started()
  std::shared_ptr<void> alive_ = std::make_shared<int>(0);  // a posted Started() runs only while the fleet lives
  bool started_ = false;
  std::thread rejoin_thread_;
  bool rejoin_busy_ = false;
  bool draining_ = false;
  asio::steady_timer drain_timer_;
};

}  // namespace ds
