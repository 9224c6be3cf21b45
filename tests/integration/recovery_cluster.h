// RecoveryCluster: a job's nodes and coordinator in one process, for the
// recovery property test (recovery_property_test.cc). Each node has a
// checkpoint directory that outlives runs and, while it is up, a real
// SnapshotKeeper (the agent's snapshot side: its memory store, disk,
// task thread, inotify and loopback peer links); the coordinator's part is
// a real SnapshotIndex and RecoveryPoint fed with the agents' SnapshotHeld
// reports (the plan they give goes to every agent, as JobControl sends it),
// and Gather does what JobControl::Gather and OnFetched do (decide, have
// every agent fetch, leave out a save that failed and decide again),
// without sockets to a coordinator. Not thread-safe: one test thread drives it.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "agent/snapshots/keeper.h"
#include "launcher/coordinator/recovery_point.h"
#include "launcher/coordinator/snapshot_index.h"

namespace ds::testing {

class RecoveryCluster {
 public:
  // (node, step, set, shard, tier): a shard an agent reported holding.
  using Held = std::tuple<int, int64_t, std::string, uint32_t, uint8_t>;

  // `nodes` node slots with their directories under `root`.
  RecoveryCluster(const std::string& root, int nodes);
  ~RecoveryCluster();

  // A new run (a new dslaunch invocation) with id `run`: agents start on
  // `nodes`, each finding what its directory holds.
  void StartRun(const std::string& run, const std::vector<int>& nodes);
  // Every agent stops (the run ended).
  void EndRun();
  // Node `n`'s agent dies (its memory with it); its directory stays.
  void KillNode(int n);
  // A new agent on node `n` (a rejoin): it reports its directory again.
  void StartNode(int n);

  int nodes() const { return static_cast<int>(slots_.size()); }
  bool up(int n) const { return slots_[n].keeper != nullptr; }
  std::vector<int> UpNodes() const;
  const std::string& disk(int n) const { return slots_[n].disk; }
  std::string memory_dir(int n) const { return slots_[n].keeper->memory_dir(); }

  // The gather before generation `gen`: the decision (said in `said`, as
  // dslaunch would), every up agent holding the chosen save afterwards;
  // replicas of new shards then go to the next `replicas` up nodes in ring
  // order.
  RecoveryChoice Gather(int gen, int replicas, std::string* said);
  // Waits (at most 20 s) until every one of `expected` was reported.
  // False when some never was.
  bool Settle(const std::set<Held>& expected);
  // The ring targets of node `n` (node indices) for `replicas` replicas.
  std::vector<int> Targets(int n, int replicas) const;

 private:
  struct Slot {
    std::string disk;
    std::string memory_parent;
    std::unique_ptr<SnapshotKeeper> keeper;
  };
  // Takes what the agents report (waiting up to timeout_ms for something).
  void Pump(int timeout_ms);
  bool WaitFor(const std::function<bool()>& done);

  std::vector<Slot> slots_;
  std::string run_;
  SnapshotIndex index_;
  std::unique_ptr<RecoveryPoint> point_;       // this run's
  std::set<SnapshotIndex::Save> bad_;
  std::set<Held> seen_;                        // every addition reported, this run
  std::vector<std::pair<int, msg::Fetched>> fetched_;
};

}  // namespace ds::testing
