// ShardIndex: the (step, set, shard) -> HeldShard map of one place the agent
// keeps shards in (its memory directory, its node's checkpoint directory),
// each save of a step in <root>/step_<NNNNNNNN>.<set>/ (one directory per
// save: wire/snapshot_handoff.h), with the save-wise removals both need.
// The set pins the rest of a save's identity (it digests the manifest,
// which records run, world, stage and config). It only ever drops whole
// saves, and only keeps the map: its owner removes the save directories
// that DropIf and Prune return (RemoveStepDirs), relative to the root it
// opened. Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/dir.h"
#include "wire/protocol.h"

namespace ds {

struct HeldShard {
  msg::ShardEntry entry;
  uint32_t crc32 = 0;
};

class ShardIndex {
 public:
  explicit ShardIndex(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }

  void Put(const HeldShard& h);
  std::optional<HeldShard> Find(int64_t step, const std::string& set, uint32_t shard) const;
  bool Has(int64_t step, const std::string& set, uint32_t shard) const { return Find(step, set, shard).has_value(); }
  std::vector<HeldShard> All() const;
  uint32_t CountAt(int64_t step, const std::string& set) const;  // shards of that save held
  void Clear();
  // Drop whole saves and return what went (the owner removes their
  // directories: RemoveStepDirs): those `doomed` picks ...
  using SavePredicate = std::function<bool(int64_t step, const msg::SnapshotId& id)>;
  std::vector<msg::ShardEntry> DropIf(const SavePredicate& doomed);
  // ... or run `run`'s that `plan` (the coordinator's, recovery_point.h)
  // lets go: never a save it protects; of the steps up to plan.complete
  // (handed over by every rank) all but the newest `keep` (at least 1); of
  // the newer ones, still being handed over, all but the newest
  // kMaxInFlight (an incomplete save no rank will finish). Other runs'
  // saves are never pruned.
  std::vector<msg::ShardEntry> Prune(int keep, const std::string& run, const msg::SnapshotPlan& plan);
  static constexpr int kMaxInFlight = 4;

 private:
  std::vector<msg::ShardEntry> DropLocked(const SavePredicate& doomed);  // mu_ held

  const std::string root_;
  mutable std::mutex mu_;
  std::map<std::tuple<int64_t, std::string, uint32_t>, HeldShard> held_;  // (step, set, shard)
};

// Removes the step directories of `gone` (what Prune or DropAbove returned)
// from `root`, the open directory the index describes; a symlink in a step's
// place is unlinked, never followed, and a directory of another user is left.
// Warnings name what could not be removed.
void RemoveStepDirs(const Dir& root, const std::vector<msg::ShardEntry>& gone);

}  // namespace ds
