// SnapshotIndex: which node holds which shard of which save of the job's
// snapshots, in memory or on its disk only, as the agents report it
// (SnapshotHeld), and the recovery decision (checkpoint_format.md
// "Recovery"). A save is one step saved once: its shards carry one
// msg::SnapshotId (run, world, ZeRO stage, config hash, set), and only
// shards of the same save ever count together, so a step is never
// completed with another run's, world's or timeline's shards. Pure: no
// sockets, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "wire/protocol.h"

namespace ds {

struct ShardPick {
  uint32_t shard = 0;
  int holder = 0;          // node index
  uint32_t origin = 0;     // node whose worker wrote it
  uint8_t tier = 1;        // 1 memory, 2 disk
};

struct RecoveryChoice {
  int64_t step = -1;                 // -1: nothing complete, start fresh
  msg::SnapshotId id;                // the save of `step` resumed (id.world ranks saved it)
  bool earlier_run = false;          // id.run is not this run's
  std::vector<ShardPick> picks;      // one per shard, by shard
  bool from_disk = false;            // some shard comes from a disk only
  // The newest step of the saves considered (this run's, or before it saved
  // anything, the earlier runs' it may resume), when it is not `step`, and
  // the shards of it no living node holds.
  int64_t newest = -1;
  bool newest_earlier_run = false;   // `newest` is an earlier run's
  std::vector<uint32_t> newest_missing;
  // Earlier runs' saves the living nodes hold and this generation does not
  // resume: kept as they are (never pruned or overwritten by this run).
  int kept_saves = 0;
  int kept_runs = 0;
};

class SnapshotIndex {
 public:
  using Save = std::pair<int64_t, std::string>;  // (step, set)

  void Apply(int node, const msg::SnapshotHeld& m);
  // A lost node's copies are gone (its disk may come back with its agent,
  // which reports it again).
  void Forget(int node);
  // The decision for run `run` over the nodes with alive[node] true, saves
  // in `excluded` left out (they failed to gather). Candidates are the
  // saves whose every shard 0..world-1 a living node holds: the newest of
  // this run's own; when it has none, the newest of an earlier run's with
  // this run's config hash (any config while this run has saved nothing:
  // the workers then check it and start fresh on a mismatch). Of two saves
  // of one step the later run's wins (run ids begin with their start time),
  // then the larger set (both are whole). Per shard the
  // holder is, in order of preference: the node that wrote it (memory), a
  // replica in memory, a disk.
  RecoveryChoice Decide(const std::vector<bool>& alive, const std::string& run,
                        const std::set<Save>& excluded = {}) const;
  bool empty() const { return held_.empty(); }

 private:
  // Fills c's newest and newest_missing from the saves `best` holds.
  void FindLoss(const std::map<std::pair<int64_t, msg::SnapshotId>, std::map<uint32_t, ShardPick>>& best,
                    const std::string& run, bool own, RecoveryChoice* c) const;

  // (step, save, shard, node, tier) -> the node whose worker wrote it
  std::map<std::tuple<int64_t, msg::SnapshotId, uint32_t, int, uint8_t>, uint32_t> held_;
  // Per run, the newest step any of its saves was ever reported at, and
  // those saves (whether a run saved at all, with which config, and what
  // it lost, is all Decide needs: bounded by runs, not by saves).
  struct Newest {
    int64_t step = -1;
    std::set<msg::SnapshotId> saves;
  };
  std::map<std::string, Newest> newest_;
};

// "resuming from step 400: 3 shards from memory, 1 from w1's replica of w2"
// (hosts by node index), with the earlier-run, fallback and from-scratch
// wording.
std::string DescribeRecovery(const RecoveryChoice& c, const std::vector<std::string>& hosts);
// Its part after the colon: "3 shards from memory, 1 from w1's replica of w2".
std::string DescribePicks(const RecoveryChoice& c, const std::vector<std::string>& hosts);
// "" when c kept no earlier run's saves, else the line that says they are kept.
std::string DescribeKept(const RecoveryChoice& c);

}  // namespace ds
