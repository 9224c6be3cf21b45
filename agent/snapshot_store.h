// SnapshotStore: the shards a node's agent holds in memory, as files in a
// private tmpfs directory (mode 0700, /dev/shm when it exists) that the
// agent owns for the whole job, so they outlive every worker:
//
//   <dir>/incoming/<step>.<rank>.<world>.shard     a worker's handoff, then
//   <dir>/incoming/<step>.<rank>.<world>.manifest  (its arrival completes it)
//   <dir>/step_<NNNNNNNN>/shard_<r>.bin            held shards
//   <dir>/step_<NNNNNNNN>/manifest.json            the step's manifest
//
// The step directories have checkpoint_format.md's layout, so a worker loads
// a step the agent gathered like any checkpoint. Thread-safe: the agent's
// loop adopts handoffs while its shard server and task thread put and read.
// The directory is removed with the store (a SIGKILLed agent's by the next
// agent on the machine: agent_dirs.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/protocol.h"
#include "common/status.h"

namespace ds {

struct HeldShard {
  msg::ShardEntry entry;
  uint32_t crc32 = 0;
};

// A shard's bytes with what describes them.
struct ShardCopy {
  HeldShard held;
  std::string manifest;
  std::string data;
};

// "<step>.<rank>.<world>.manifest" -> (step, rank, world); nullopt for any
// other name.
std::optional<std::tuple<int64_t, uint32_t, uint32_t>> ParseHandoffName(const std::string& name);
std::string HandoffName(int64_t step, uint32_t rank, uint32_t world, const char* suffix);

class SnapshotStore {
 public:
  // A new private directory under `parent` ("" = /dev/shm, else $TMPDIR or /tmp).
  static Result<std::unique_ptr<SnapshotStore>> Create(const std::string& parent = "");
  ~SnapshotStore();  // removes the directory and everything in it
  SnapshotStore(const SnapshotStore&) = delete;
  SnapshotStore& operator=(const SnapshotStore&) = delete;

  const std::string& dir() const { return dir_; }
  std::string incoming_dir() const { return dir_ + "/incoming"; }

  // The worker's handoff whose manifest is incoming/`manifest_name`: moved
  // into its step directory and held (origin = this node). InvalidArgument
  // for a name that is not a handoff or a shard file that is missing.
  Result<HeldShard> Adopt(const std::string& manifest_name, uint32_t origin);
  // A shard from a peer or from disk (both checked its crc32); its size
  // must be the entry's.
  Status Put(const ShardCopy& copy);
  // The shard with its manifest; NotFound when not held.
  Result<ShardCopy> Read(int64_t step, uint32_t shard) const;
  bool Has(int64_t step, uint32_t shard) const;
  std::vector<HeldShard> Entries() const;
  // Drops every step older than the newest `keep` steps held; returns what went.
  std::vector<msg::ShardEntry> Prune(int keep);
  // Drops every step newer than `step` (a timeline a restart abandoned).
  std::vector<msg::ShardEntry> DropAbove(int64_t step);

 private:
  explicit SnapshotStore(std::string dir) : dir_(std::move(dir)) {}
  std::string StepDir(int64_t step) const;
  Status Hold(const HeldShard& h, const std::string& manifest);  // mu_ held
  std::vector<msg::ShardEntry> Drop(int64_t step);                // mu_ held

  const std::string dir_;
  mutable std::mutex mu_;
  std::map<std::pair<int64_t, uint32_t>, HeldShard> held_;  // (step, shard)
};

}  // namespace ds
