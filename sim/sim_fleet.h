// SimFleet: thousands of dssim agents (sim_agent.h: each the real
// AgentControl with fake workers) on one io_context, against one real
// coordinator. The agents connect from loopback addresses spread so that
// neither they nor the store clients run out of ephemeral ports; their
// workers can run the store pattern of a NCCL/Gloo bootstrap (sim_store.h)
// and exit 0 when the scenario says. What the agents saw is counted per
// generation (ranks, world size, times) for the scenario (scenario.h) to
// check and time.
// Threads: the fleet runs on the io thread; the scenario thread calls the
// commands (posted to the io thread) and reads Seen() under the fleet's lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/asio.h"
#include "sim/sim_agent.h"

namespace ds::sim {

struct FleetConfig {
  int agents = 0;
  std::string job_id;
  std::string token;                     // every node's agent token (EnrollAgents)
  asio::ip::tcp::endpoint coordinator;
  double heartbeat_interval = 1.0;
  double heartbeat_timeout = 5.0;        // the agents' limit for a silent coordinator
};

// What the agents saw of one generation.
struct GenerationSeen {
  SimTime first_reserve{}, last_assign{}, first_stop{}, all_stopped{};
  int assigned = 0;                 // agents that got its Assign
  int duplicate_assigns = 0;        // an agent that got a second Assign for it
  std::vector<int> assigned_nodes;  // which (by node index, in arrival order)
  std::vector<int> rank_hits;       // by rank: workers that were given it
  int world_size = -1;              // WORLD_SIZE the workers got (-2: not the same everywhere)
  int workers = 0;
  int stopped = 0;                  // agents that answered its Stop (Stopped, once their workers ended)
  int store_done = 0, store_failed = 0;
  SimTime store_start{}, store_end{};
};

struct FleetSeen {
  int ready = 0;                    // authenticated and registered
  int connect_failures = 0;         // gave up: refused, reset or timed out before registering, every try
  int retries = 0;                  // connects tried again (a second after one failed)
  int shutdowns = 0;                // Shutdown received
  int unexpected_ends = 0;          // left without a Shutdown (lost the coordinator), not silenced/killed
  std::vector<std::string> errors;  // the first few reasons of the above
  std::map<int, GenerationSeen> gens;
  std::map<int, SimTime> silenced;  // node -> when it last sent something (its last heartbeat)
  int64_t progress_frames = 0;      // Progress summaries the agents sent
  const GenerationSeen* gen(int g) const {
    auto it = gens.find(g);
    return it == gens.end() ? nullptr : &it->second;
  }
};

class SimFleet final : private SimAgentObserver {
 public:
  SimFleet(asio::io_context& io, FleetConfig config);
  ~SimFleet() override;

  // Commands; each runs on the io thread.
  void ConnectAll();
  // The agent stops sending anything and ignores what it gets (a hung node).
  void Silence(int node);
  // The agent's connection closes at once (its process died).
  void Kill(int node);
  // Every worker of generation `g` runs the bootstrap store pattern, then beats once.
  void RunStore(int g);
  // Every worker of generation `g` exits 0.
  void FinishWorkers(int g);
  // Every running worker beats its next step every `step_seconds` (the long
  // beat: compute 80% of the step, 32 samples) until StopSteps.
  void StartSteps(double step_seconds);
  void StopSteps();

  // Waits until pred(Seen()) holds or `timeout` passes; false on timeout.
  bool WaitUntil(const std::function<bool(const FleetSeen&)>& pred, std::chrono::milliseconds timeout);
  // A copy of what was seen so far.
  FleetSeen Seen() const;

 private:
  // SimAgentObserver, on the io thread.
  void Registered(int node) override;
  void Received(int node, const Frame& f) override;
  void Sent(int node, wire::MsgType type, const Bytes& payload) override;
  void WorkersStarted(int node, const msg::Assign& m, bool again) override;
  void Retried(int node) override;
  void Left(int node, int exit_code, bool registered, const std::string& why) override;
  void NoteError(const std::string& what);  // under mu_
  void StepAll();                            // io thread: one beat per running worker, then re-arm

  asio::io_context& io_;
  FleetConfig config_;
  std::vector<SimAgentConfig> agent_configs_;  // by node (its source address)
  std::vector<std::unique_ptr<SimAgent>> agents_;
  asio::steady_timer step_timer_;
  double step_seconds_ = 0;                    // 0: not stepping
  mutable std::mutex mu_;
  std::condition_variable changed_;
  FleetSeen seen_;  // guarded by mu_
};

}  // namespace ds::sim
