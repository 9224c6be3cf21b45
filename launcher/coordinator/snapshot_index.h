// SnapshotIndex: which node holds which (step, shard) of the job's
// snapshots, in memory or on its disk only, as the agents report it
// (SnapshotHeld), and the recovery decision: the newest step whose every
// shard is held by a living node, and which holder each shard comes from
// (checkpoint_format.md "Recovery"). Pure: no sockets, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/protocol.h"

namespace ds {

struct ShardPick {
  uint32_t shard = 0;
  int holder = 0;          // node index
  uint32_t origin = 0;     // node whose worker wrote it
  uint8_t tier = 1;        // 1 memory, 2 disk
};

struct RecoveryChoice {
  int64_t step = -1;                 // -1: nothing complete, start fresh
  uint32_t world = 0;                // world size that saved `step`
  std::vector<ShardPick> picks;      // one per shard, by shard
  bool from_disk = false;            // some shard comes from a disk only
  // The newest step anyone reported, when it is not `step`, and the shards
  // of it no living node holds.
  int64_t newest = -1;
  std::vector<uint32_t> newest_missing;
};

class SnapshotIndex {
 public:
  void Apply(int node, const msg::SnapshotHeld& m);
  // A lost node's copies are gone (its disk may come back with its agent,
  // which reports it again).
  void Forget(int node);
  // The decision over the nodes with alive[node] true, steps in `excluded`
  // left out (they failed to gather). Per shard the holder is, in order of
  // preference: the node that wrote it (memory), a replica in memory, a disk.
  RecoveryChoice Decide(const std::vector<bool>& alive, const std::set<int64_t>& excluded = {}) const;
  bool empty() const { return held_.empty(); }

 private:
  struct Held {
    uint32_t world = 0;
    uint32_t origin = 0;
  };
  // (step, shard, node, tier) -> what it is
  std::map<std::tuple<int64_t, uint32_t, int, uint8_t>, Held> held_;
  int64_t newest_ever_ = -1;
};

// "resuming from step 400: 3 shards from memory, 1 from w1's replica of w2"
// (hosts by node index), with the fallback and from-scratch wording.
std::string DescribeRecovery(const RecoveryChoice& c, const std::vector<std::string>& hosts);

}  // namespace ds
