// SnapshotStore: the shards a node's agent holds in memory, as files in a
// private tmpfs directory (mode 0700, /dev/shm when it exists) that the
// agent owns for the whole job, so they outlive every worker:
//
//   <dir>/incoming/...                             workers' handoffs (wire/snapshot_handoff.h)
//   <dir>/incoming/spare.<r>                       a pruned shard's file, for rank r's next handoff
//   <dir>/receiving/shard.XXXXXX                   shards arriving from peers (Receive)
//   <dir>/receiving/spare.<r>                      such a file until ReleaseSpares
//   <dir>/step_<NNNNNNNN>.<set>/shard_<r>.bin      held shards of one save
//   <dir>/step_<NNNNNNNN>.<set>/manifest.json      its manifest (set = its digest)
//
// The step directories have checkpoint_format.md's layout, so a worker loads
// a save the agent gathered like any checkpoint. A shard is only ever put
// into the directory of the save its manifest's digest names. The directory
// is opened once, right after mkdtemp, as a checked Dir (common/dir.h), and
// everything in it is reached relative to that descriptor. Thread-safe: the agent's
// loop adopts handoffs while its shard server and task thread put and read.
// The directory is removed with the store (a SIGKILLed agent's by the next
// agent on the machine: common/process_dirs.h).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/snapshots/shard_index.h"
#include "agent/snapshots/shard_sink.h"
#include "common/dir.h"
#include "common/status.h"
#include "wire/client_conn.h"
#include "wire/protocol.h"

namespace ds {

// A shard's bytes with what describes them (received, or read to be checked).
struct ShardCopy {
  HeldShard held;
  std::string manifest;
  std::string data;
};

// A held shard's file, open for reading (it stays readable when the shard is
// pruned meanwhile), with what describes it: sent and persisted from the
// file, without copying its bytes through the agent.
struct ShardFile {
  HeldShard held;
  std::string manifest;
  UniqueFd fd;
};

// Opens the file `name` of `dir` (Dir::OpenFile: a regular file of this
// user, not a symlink) as the shard `held` describes; InvalidArgument when
// its size is not the entry's.
Result<ShardFile> OpenShardFile(const Dir& dir, const std::string& name, const HeldShard& held,
                                std::string manifest);
// The bytes of `f`, checked against its crc32 ("... crc32 mismatch") and
// its manifest against the set ("... not the manifest of set S").
Result<ShardCopy> ReadVerified(const ShardFile& f);
// InvalidArgument unless `manifest` is the one `held`'s set names.
Status CheckManifest(const HeldShard& held, const std::string& manifest);

class SnapshotStore {
 public:
  // A new private directory under `parent` ("" = /dev/shm, else $TMPDIR or /tmp).
  static Result<std::unique_ptr<SnapshotStore>> Create(const std::string& parent = "");
  ~SnapshotStore();  // removes the directory and everything in it
  SnapshotStore(const SnapshotStore&) = delete;
  SnapshotStore& operator=(const SnapshotStore&) = delete;

  const std::string& dir() const { return dir_.path(); }
  std::string incoming_dir() const { return incoming_.path(); }

  // The worker's handoff whose manifest is incoming/`manifest_name`: moved
  // into its save's directory and held (origin = this node), without reading
  // the shard's bytes (its size from stat, its crc32 and identity from the
  // name, its set from the manifest's digest).
  // NotFound when the manifest is not there (adopted already);
  // InvalidArgument for a name that is not a handoff, or a shard file that
  // is missing or not a regular file.
  Result<HeldShard> Adopt(const std::string& manifest_name, uint32_t origin);
  // A shard from a peer or from disk (both checked its crc32); its size
  // must be the entry's and its manifest the one of its set.
  Status Put(const ShardCopy& copy);
  // Where a shard arriving from a peer goes: a file in receiving/ written as
  // its bytes come, moved into its step directory and held on Commit.
  // Refused before any byte when its size is more than the node has free for
  // it (the directory's filesystem, and for tmpfs also the memory available):
  // "shard 0 of step 9: 60.0 GiB announced, more than the 23.1 GiB free for
  // it in <dir>".
  Result<std::unique_ptr<ShardSink>> Receive(const HeldShard& held, std::string manifest);
  // The shard's file with its manifest; NotFound when not held.
  Result<ShardFile> Open(int64_t step, const std::string& set, uint32_t shard) const;
  bool Has(int64_t step, const std::string& set, uint32_t shard) const { return index_.Has(step, set, shard); }
  std::vector<HeldShard> Entries() const { return index_.All(); }
  // Drops what ShardIndex::Prune lets go of run `run`; returns what went.
  // The files of dropped shards that node `spares_of` wrote are kept aside
  // (receiving/spare.<r>) instead of freed: ReleaseSpares hands them to the
  // workers, whose next handoff of that rank is written into the memory
  // they already have (no page allocation on the worker's side).
  std::vector<msg::ShardEntry> Prune(int keep, const std::string& run, const msg::SnapshotPlan& plan,
                                     std::optional<uint32_t> spares_of = {});
  // Moves the files kept aside to incoming/spare.<r> (call when nobody reads
  // them any more: after the tasks that were sending or persisting them).
  void ReleaseSpares();
  // Drops the saves `doomed` picks (ShardIndex::DropIf).
  std::vector<msg::ShardEntry> DropIf(const ShardIndex::SavePredicate& doomed);

 private:
  class Receiving;  // the ShardSink of Receive()
  SnapshotStore(Dir dir, Dir incoming, Dir receiving)
      : dir_(std::move(dir)), incoming_(std::move(incoming)), receiving_(std::move(receiving)), index_(dir_.path()) {}
  Status Hold(const Dir& step, const HeldShard& h, const std::string& manifest);  // mu_ held
  // Moves the received file receiving/`name` to its place and holds it.
  Status Keep(const std::string& name, const HeldShard& h, const std::string& manifest);

  const Dir dir_;
  const Dir incoming_;
  const Dir receiving_;  // shards arriving from peers, until complete
  std::mutex mu_;     // a shard's files and its index entry change together
  ShardIndex index_;
};

}  // namespace ds
