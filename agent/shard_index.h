// ShardIndex: the (step, shard) -> HeldShard map of one place the agent keeps
// shards in (its memory directory, its node's checkpoint directory), each
// step in <root>/step_<NNNNNNNN>/, with the step-wise removals both need.
// It only keeps the map: its owner removes the step directories that
// Prune and DropAbove return (RemoveStepDirs), relative to the root it
// opened. Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/dir.h"
#include "common/protocol.h"

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
  std::optional<HeldShard> Find(int64_t step, uint32_t shard) const;
  bool Has(int64_t step, uint32_t shard) const { return Find(step, shard).has_value(); }
  std::vector<HeldShard> All() const;
  uint32_t CountAt(int64_t step) const;  // shards of `step` held
  void Clear();
  // Drop whole steps and return what went:
  // those older than the newest `keep` (at least 1) ...
  std::vector<msg::ShardEntry> Prune(int keep);
  // ... or every step newer than `step` (a timeline a restart abandoned).
  std::vector<msg::ShardEntry> DropAbove(int64_t step);

 private:
  std::vector<msg::ShardEntry> Drop(int64_t step);  // mu_ held

  const std::string root_;
  mutable std::mutex mu_;
  std::map<std::pair<int64_t, uint32_t>, HeldShard> held_;
};

// Removes the step directories of `gone` (what Prune or DropAbove returned)
// from `root`, the open directory the index describes; a symlink in a step's
// place is unlinked, never followed, and a directory of another user is left.
// Warnings name what could not be removed.
void RemoveStepDirs(const Dir& root, const std::vector<msg::ShardEntry>& gone);

}  // namespace ds
