// AgentFleet: the dsagent processes of one job, as a Spawner started them.
// It waits on each agent's exit (AgentHandle::exit_fd) instead of asking
// "still running?" on a timer: an agent that ends before registering fails
// the job; with elastic.rejoin, a node the coordinator lost gets a new agent
// 2 s later, then 4, 8, ... up to 30 s apart until one registers; at the
// end it gives the agents a grace period to exit on their own, terminates the
// rest and stops the io_context. Every spawner call runs on a thread of its
// own (an SSH connect may take connect_timeout), one at a time, and every
// handle the fleet is done with is ended by its HandleReaper: nothing here
// waits on a peer on the io thread (the coordinator's).
// With a launch tree (FleetTree, --fanout-tree) the spawner starts only the
// tree's roots; each registered agent is told to start its children
// (StartAgents), and a child its parent could not start, or that has not
// registered in time, is started by the spawner (LaunchTree). Every node has
// a token of its own: a parent hands each child the child's token, never its
// own. Agents started by other agents have no handle here: their
// coordinator link is their supervision.
// The coordinator tells it of agents registered and lost through FleetEvents
// (it is given the fleet at Coordinator::Start); the fleet calls the
// Coordinator directly, and keeps what it learns (who registered, who is
// lost) itself rather than asking the coordinator's state machine.
// Not thread-safe: the io thread only (the spawner thread posts back to it).
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
#include "launcher/coordinator/fleet_events.h"
#include "launcher/fleet/handle_reaper.h"
#include "launcher/fleet/launch_tree.h"
#include "launcher/spawn/spawner.h"

namespace ds {

// --fanout-tree: agents start agents.
struct FleetTree {
  int width = 0;  // children per node; 0 = no tree, the spawner starts every agent
  Clock::duration handoff_timeout{};  // a handed-off child registers within this, or the spawner starts it
  // The command a registered agent runs to start `child`'s agent (an ssh
  // command line; the token goes on its stdin), as `parent`'s child.
  std::function<std::vector<std::string>(const AgentSpec& child, int parent)> command;
};

struct FleetOptions {
  std::function<void(const std::string&)> notice;  // shows the user a line (a rejoin attempt that failed)
  // The per-node form's keys, derived from its secret per node: replaces the
  // fresh random token of every start, and a lost node is enrolled with it
  // again (its node starts its own new agent). Null = fresh random tokens.
  std::function<std::string(int node)> derived_token;
  FleetTree tree;                                  // --fanout-tree; width 0 = none
  bool rejoin = false;                             // a lost node gets new agents (elastic.rejoin with restarts)
  Clock::duration first_rejoin_delay = std::chrono::seconds(2);  // loss -> first try; doubles per try
  Clock::duration max_rejoin_delay = std::chrono::seconds(30);   // ... up to this
};

class AgentFleet final : public FleetEvents {
 public:
  // `coord` and `spawner` must outlive the fleet; `specs` are by node index.
  AgentFleet(asio::io_context& io, Coordinator& coord, Spawner& spawner, std::vector<AgentSpec> specs,
             FleetOptions options);
  ~AgentFleet() override;  // joins a spawner call still running; waits until the reaper has ended every handle

  // Starts every agent (in parallel, through the spawner) with a fresh agent
  // token of its node on its stdin (Coordinator::EnrollAgent; the job secret stays in
  // dslaunch); a node whose agent cannot be started aborts the job, naming
  // the host and the reason. Returns at once: the spawner runs on a thread
  // of its own (SSH sessions at fan-out N, thousands of local processes take
  // seconds) while the io loop goes on, so the coordinator registers agents
  // as they come; the handles come back to the io thread (started()).
  void Start();
  // Start()'s spawner has returned and its handles are watched.
  bool started() const { return started_; }
  // FleetEvents. A registered agent is told which agents to start (launch
  // tree); a lost one no longer holds the drain (a step launcher may report
  // a dead node's task late or never) and, with `rejoin`, gets new agents
  // until one registers; a launch tree's child that its parent could not
  // start is started from here.
  void OnAgentRegistered(int node) override;
  void OnAgentLost(int node) override;
  void OnAgentAway(int node) override;  // its derived key opens a registration again
  void OnAgentEnded(int parent, const msg::AgentEnded& ended) override;
  // The job is over: wait up to `grace` for every agent to exit, terminate
  // what is left, then stop the io_context.
  void Drain(Clock::duration grace);

 private:
  struct Member {
    std::unique_ptr<AgentHandle> handle;  // null if it failed to start, or once handed to the reaper
    std::unique_ptr<asio::posix::stream_descriptor> exit_watch;
    int incarnation = 0;      // bumps when a rejoin replaces the handle
    bool registered = false;  // its node's agent registered, once or more
    bool lost = false;        // OnAgentLost, until a rejoin replaces the handle
  };

  using Started = std::vector<Result<std::unique_ptr<AgentHandle>>>;

  // Runs spawner_.Start(specs) on the spawn thread; `done` gets the results
  // on the io thread, unless the fleet is gone by then.
  void Spawn(std::vector<AgentSpec> specs, std::function<void(Started)> done);
  // The spawner is free: queued direct starts first, then rejoins.
  void SpawnerFree();
  // Watches the agents a spawner call started for `nodes` (in that order).
  void AdoptAll(const std::vector<int>& nodes, Started started);
  void Adopt(int node, std::unique_ptr<AgentHandle> handle);
  void Watch(int node);
  // A new token for `node` (spending its older one); the key its next agent uses.
  std::string Enroll(int node);
  void OnExited(int node);
  void Rejoin(int node);
  void ArmRejoinTimer();
  void TryRejoins();
  void Rejoined(int node, Result<std::unique_ptr<AgentHandle>> started);
  // Launch tree: the spawner starts `node` (and the agents below it) itself.
  void StartDirect(int node, const std::string& why);
  void ArmTreeTimer();
  bool AnyRunning() const;
  void TerminateAllAndStop();

  HandleReaper reaper_;  // destroyed last: it waits for the handles it was given
  asio::io_context& io_;
  Coordinator& coord_;
  Spawner& spawner_;
  std::vector<AgentSpec> specs_;
  FleetOptions opt_;
  std::vector<Member> members_;  // by node index
  // elastic.rejoin: when each lost node is tried next, and its backoff;
  // a node leaves when a new agent of it registers.
  std::map<int, Clock::time_point> next_try_;
  std::map<int, Clock::duration> backoff_;
  asio::steady_timer rejoin_timer_;
  std::thread spawn_thread_;     // the spawner call in progress, if any
  bool spawner_busy_ = false;
  std::function<void(Started)> spawn_done_;  // what gets its results
  std::mutex spawn_mu_;
  Started spawned_;              // guarded by spawn_mu_: results on their way to spawn_done_
  std::shared_ptr<void> alive_ = std::make_shared<int>(0);  // a posted result is used only while the fleet lives
  bool started_ = false;
  bool draining_ = false;
  asio::steady_timer drain_timer_;
  std::unique_ptr<LaunchTree> tree_;   // with opt_.tree.width
  std::vector<int> direct_queue_;      // tree nodes the spawner starts next
  asio::steady_timer tree_timer_;      // the next hand-off deadline
};

}  // namespace ds
