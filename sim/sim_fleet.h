// SimFleet: thousands of simulated dsagents on one io_context, against one
// real coordinator. Each agent authenticates with the fleet's token,
// registers, heartbeats (every heartbeat_interval, staggered over the
// interval as real agents are), answers Reserve, reports its workers started
// on Assign, exited and stopped on Stop, and closes on Shutdown, without
// spawning a process. Workers can run the store pattern of a NCCL/Gloo
// bootstrap (sim_store.h) and exit 0. What the agents saw is counted per
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
#include "sim/sim_conn.h"

namespace ds::sim {

using SimClock = std::chrono::steady_clock;
using SimTime = SimClock::time_point;

struct FleetConfig {
  int agents = 0;
  std::string job_id;
  std::string token;                     // every node's agent token (EnrollAgents)
  asio::ip::tcp::endpoint coordinator;
  double heartbeat_interval = 1.0;
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
  int stopped = 0;                  // agents that answered its Stop
  int store_done = 0, store_failed = 0;
  SimTime store_start{}, store_end{};
};

struct FleetSeen {
  int ready = 0;                    // authenticated and registered
  int connect_failures = 0;         // gave up: refused, reset or timed out before registering, every try
  int retries = 0;                  // connects tried again (a second after one failed)
  int shutdowns = 0;                // Shutdown received
  int unexpected_ends = 0;          // closed by the coordinator without a Shutdown, not silenced/killed
  std::vector<std::string> errors;  // the first few reasons of the above
  std::map<int, GenerationSeen> gens;
  std::map<int, SimTime> silenced;  // node -> when it last sent something (its last heartbeat)
  const GenerationSeen* gen(int g) const {
    auto it = gens.find(g);
    return it == gens.end() ? nullptr : &it->second;
  }
};

class SimFleet {
 public:
  SimFleet(asio::io_context& io, FleetConfig config);
  ~SimFleet();

  // Commands; each runs on the io thread.
  void ConnectAll();
  // The agent stops sending anything and ignores what it gets (a hung node).
  void Silence(int node);
  // The agent's connection closes at once (its process died).
  void Kill(int node);
  // Every worker of generation `g` runs the bootstrap store pattern.
  void RunStore(int g);
  // Every worker of generation `g` exits 0.
  void FinishWorkers(int g);

  // Waits until pred(Seen()) holds or `timeout` passes; false on timeout.
  bool WaitUntil(const std::function<bool(const FleetSeen&)>& pred, std::chrono::milliseconds timeout);
  // A copy of what was seen so far.
  FleetSeen Seen() const;

 private:
  struct Agent;
  void Connect(Agent& a);
  void OnReady(int node);
  void OnFrame(int node, const Frame& f);
  void OnAssign(Agent& a, const Frame& f);
  void OnStop(Agent& a, const Frame& f);
  void OnEnd(int node, const std::string& why);
  void SendFrom(Agent& a, wire::MsgType type, const Bytes& payload);
  void Tick();
  void NoteError(const std::string& what);

  asio::io_context& io_;
  FleetConfig config_;
  std::vector<std::unique_ptr<Agent>> agents_;
  asio::steady_timer tick_;
  int tick_count_ = 0;
  int ticks_per_interval_ = 1;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  FleetSeen seen_;  // guarded by mu_
};

}  // namespace ds::sim
