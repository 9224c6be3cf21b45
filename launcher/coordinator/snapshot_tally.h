// SnapshotTally: the snapshot figures the job's views show (job_view.h):
// per node the newest step it holds a shard of (in memory or on its disk
// only) and the bytes it holds, its agent's counters as totals that only
// grow (an agent that restarted, whose counters began again at 0, adds to
// what its predecessor reported), and job-wide the saves taken so far. A
// save is counted when its shard 0 first reaches, in memory, the agent of
// the node whose worker wrote it (each save has exactly one such entry;
// replicas and disk copies are not saves). It only counts: the recovery
// decision is SnapshotIndex's. Fed every SnapshotHeld (SnapshotGather::OnHeld);
// O(log held) per entry of a frame; Node() O(1), newest_step() O(nodes). Not thread-safe: the io thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "wire/protocol.h"

namespace ds {

struct NodeSnapshotFigures {
  int64_t newest_step = -1;         // the newest step it holds any shard of; -1: none
  bool newest_in_memory = false;    // some shard of that step is in its memory (else on its disk only)
  uint64_t bytes_held = 0;          // shards it holds now, memory and disk copies each counted
  msg::SnapshotCounters totals;     // its agents' counters since the job began, never decreasing
};

class SnapshotTally {
 public:
  explicit SnapshotTally(size_t nodes) : nodes_(nodes) {}

  // `node`'s agent now holds m.added, no longer m.removed; its counters.
  void OnHeld(int node, const msg::SnapshotHeld& m);
  // `node`'s holdings are gone (lost) or about to be reported afresh (it
  // registered); its totals stay.
  void Forget(int node);

  NodeSnapshotFigures Node(int node) const;
  uint64_t saves() const { return saves_; }
  // The newest step any node holds a shard of; -1: none.
  int64_t newest_step() const;

 private:
  using Key = std::tuple<int64_t, std::string, uint32_t, uint8_t>;  // step, set, shard, tier
  struct PerNode {
    std::map<Key, uint64_t> held;     // -> bytes
    uint64_t bytes_held = 0;
    msg::SnapshotCounters base;       // predecessors' totals (agents restarted)
    msg::SnapshotCounters last;       // the current agent's latest report
  };
  std::vector<PerNode> nodes_;
  uint64_t saves_ = 0;
};

}  // namespace ds
