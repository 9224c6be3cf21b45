// SnapshotDisk: the node's own checkpoint directory as the agent keeps it
// when snapshots are on (checkpoint_format.md "Snapshots"):
//
//   <dir>/step_<NNNNNNNN>.<set>/shard_<r>.bin    a shard this node holds
//   <dir>/step_<NNNNNNNN>.<set>/shard_<r>.held   "held 2 step shard world stage config run set origin bytes crc32"
//   <dir>/step_<NNNNNNNN>.<set>/snapshot.json    the save's manifest, always
//   <dir>/step_<NNNNNNNN>.<set>/manifest.json    the same, once every shard is here
//
// one directory per save (<set> is its manifest's digest), so a save that
// one node holds whole is an ordinary complete checkpoint, and saves of
// other runs, worlds or configs sit beside this run's untouched: this run
// writes only its own directories and prunes only its own steps.
// Directories follow checkpoint_files.h: each operation opens the directory
// (O_NOFOLLOW, owned by this user: a planted symlink or another user's
// directory is refused, naming it) and reaches its steps and files relative
// to that descriptor, so nothing is written, pruned or read anywhere else.
// Written from the agent's task thread only; read by the shard server too.
#pragma once

#include <string>
#include <vector>

#include "agent/snapshots/store.h"

namespace ds {

class SnapshotDisk {
 public:
  explicit SnapshotDisk(std::string dir) : index_(std::move(dir)) {}
  const std::string& dir() const { return index_.root(); }

  // Finds what the directory holds (written by an earlier agent of the
  // job, or of an earlier run): every save directory of this user with
  // shards whose .held record names this directory's step and set, whose
  // size matches and whose snapshot.json is the set's. Warnings name what is
  // skipped.
  std::vector<HeldShard> Scan();
  // What it holds now (Scan's, and every Persist since).
  std::vector<HeldShard> Entries() const { return index_.All(); }
  // Writes one shard (and the step's manifest) durably, copying the file in
  // the kernel.
  Status Persist(const ShardFile& src);
  // The shard's file with its manifest (its size checked against its
  // record; ReadVerified checks the crc32).
  Result<ShardFile> Open(int64_t step, const std::string& set, uint32_t shard) const;
  bool Has(int64_t step, const std::string& set, uint32_t shard) const { return index_.Has(step, set, shard); }
  // Drops what ShardIndex::Prune lets go of run `run`. Returns what went.
  std::vector<msg::ShardEntry> Prune(int keep, const std::string& run, const msg::SnapshotPlan& plan) {
    return RemoveSteps(index_.Prune(keep, run, plan));
  }
  // Drops the saves `doomed` picks (ShardIndex::DropIf). Returns what went.
  std::vector<msg::ShardEntry> DropIf(const ShardIndex::SavePredicate& doomed) {
    return RemoveSteps(index_.DropIf(doomed));
  }

 private:
  // Removes the step directories of `gone` from the directory; returns `gone`.
  std::vector<msg::ShardEntry> RemoveSteps(std::vector<msg::ShardEntry> gone);

  ShardIndex index_;
};

}  // namespace ds
