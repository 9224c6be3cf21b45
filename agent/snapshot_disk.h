// SnapshotDisk: the node's own checkpoint directory as the agent keeps it
// when snapshots are on (checkpoint_format.md "Snapshots"):
//
//   <dir>/step_<NNNNNNNN>/shard_<r>.bin    a shard this node holds
//   <dir>/step_<NNNNNNNN>/shard_<r>.held   "step shard world origin bytes crc32"
//   <dir>/step_<NNNNNNNN>/snapshot.json    the step's manifest, always
//   <dir>/step_<NNNNNNNN>/manifest.json    the same, once every shard is here
//
// so a step that one node holds whole is an ordinary complete checkpoint.
// Directories follow checkpoint_files.h: each operation opens the directory
// (O_NOFOLLOW, owned by this user: a planted symlink or another user's
// directory is refused, naming it) and reaches its steps and files relative
// to that descriptor, so nothing is written, pruned or read anywhere else.
// Written from the agent's task thread only; read by the shard server too.
#pragma once

#include <string>
#include <vector>

#include "agent/snapshot_store.h"

namespace ds {

class SnapshotDisk {
 public:
  explicit SnapshotDisk(std::string dir) : index_(std::move(dir)) {}
  const std::string& dir() const { return index_.root(); }

  // Finds what the directory holds (written by an earlier agent of the
  // job): every step directory of this user with shards and a .held record
  // whose size matches. Warnings name what is skipped.
  std::vector<HeldShard> Scan();
  // Writes one shard (and the step's manifest) durably, copying the file in
  // the kernel.
  Status Persist(const ShardFile& src);
  // The shard's file with its manifest (its size checked against its
  // record; ReadVerified checks the crc32).
  Result<ShardFile> Open(int64_t step, uint32_t shard) const;
  bool Has(int64_t step, uint32_t shard) const { return index_.Has(step, shard); }
  // Drops steps older than the newest `keep`. Returns what went.
  std::vector<msg::ShardEntry> Prune(int keep) { return RemoveSteps(index_.Prune(keep)); }
  // Drops every step newer than `step` (they belong to a timeline a restart
  // abandoned). Returns what went.
  std::vector<msg::ShardEntry> DropAbove(int64_t step) { return RemoveSteps(index_.DropAbove(step)); }

 private:
  // Removes the step directories of `gone` from the directory; returns `gone`.
  std::vector<msg::ShardEntry> RemoveSteps(std::vector<msg::ShardEntry> gone);

  ShardIndex index_;
};

}  // namespace ds
