// The snapshot and in-place recovery messages of wire/protocol.h (wire_format.md
// "Snapshots", "In-place recovery"): a save's identity on every message that names
// one, refused at decoding when it could not name a directory. One field list per
// message drives Encode and Decode (wire/protocol_codec.h); the checks sit in the
// list where the hand-written decoders made them, so a payload gets the same error.
#include <fmt/format.h>

#include "common/strings.h"
#include "wire/protocol.h"
#include "wire/protocol_codec.h"
#include "wire/snapshot_handoff.h"

namespace ds::msg {
namespace {

// An id names directories and files on the agents' disks: only the shapes
// snapshot_handoff.h allows get past decoding.
Status CheckId(const SnapshotId& id, const char* what) {
  const std::string problem = SnapshotIdProblem(id);
  if (problem.empty()) return Status::OK();
  return Status::InvalidArgument(fmt::format("{} payload: {}", what, problem));
}
Status CheckEntries(const std::vector<ShardEntry>& v, const char* what) {
  for (const ShardEntry& e : v) {
    DS_RETURN_IF_ERROR(CheckId(e.id, what));
    if (e.shard >= e.id.world)
      return Status::InvalidArgument(fmt::format("{} payload: shard {} of a world of {}", what, e.shard, e.id.world));
  }
  return Status::OK();
}
// A save reference names a directory: a set digest, or nothing for step -1.
Status CheckSave(const SaveRef& s) {
  if (s.step < 0 ? s.set.empty() : IsSetDigest(s.set)) return Status::OK();
  return Status::InvalidArgument(fmt::format("SnapshotPlan payload: step {} with set '{}' (expected 16 hex digits, "
                                             "or none for step -1)", s.step, Printable(s.set)));
}

}  // namespace

DS_FIELDS(SnapshotId) { io(m.run, m.world, m.zero_stage, m.config, m.set); }
DS_FIELDS(ShardEntry) { io(m.step, m.shard, m.id, m.origin, m.tier, m.bytes); }
DS_FIELDS(ShardSource) { io(m.shard, m.node, m.peer_addr); }
DS_FIELDS(SnapshotCounters) {
  io(m.handoffs, m.handoff_bytes, m.sent_bytes, m.sent_micros, m.persisted_bytes, m.persist_micros,
     m.budget_wait_micros, m.cpu_micros);
}
DS_FIELDS(ReplicaPeer) { io(m.node, m.peer_addr); }
// Each save reference is checked as soon as it is read.
DS_FIELDS(SaveRef) {
  io(m.step, m.set);
  io.Check([&] { return CheckSave(m); });
}
DS_FIELDS(RankMove) { io(m.old_rank, m.new_rank); }
DS_FIELDS(RankVerdict) { io(m.rank, m.ok, m.why); }

DS_FIELDS(SnapshotSetup) { io(m.dir, m.keep, m.peer_key, m.run_id); }
DS_FIELDS(SnapshotReady) { io(m.peer_addr, m.memory_dir, m.error); }
// Both lists are read before either is checked.
DS_FIELDS(SnapshotHeld) {
  io(m.added, m.removed);
  io.Check([&] {
    DS_RETURN_IF_ERROR(CheckEntries(m.added, "SnapshotHeld"));
    return CheckEntries(m.removed, "SnapshotHeld");
  });
  io(m.counters);
}
// A fresh start (step -1) names no save: its id is not checked.
DS_FIELDS(Fetch) {
  io(m.generation, m.step, m.id);
  if (m.step >= 0) io.Check([&] { return CheckId(m.id, "Fetch"); });
  io(m.sources);
}
DS_FIELDS(Fetched) { io(m.generation, m.step, m.set, m.bytes, m.micros, m.error); }
DS_FIELDS(Reshape) {
  io(m.generation, m.step, m.id);
  io.Check([&] { return CheckId(m.id, "Reshape"); });
  io(m.world, m.moves, m.sources, m.deadline_ms, m.store_addr, m.store_token);
}
DS_FIELDS(Reshaped) { io(m.generation, m.workers, m.error, m.micros); }
DS_FIELDS(WorkerReshape) { io(m.generation, m.rank, m.world, m.step, m.set, m.store_addr, m.store_token); }
DS_FIELDS(WorkerReshaped) { io(m.generation, m.ok, m.why, m.micros); }
DS_FIELDS(Replicate) { io(m.generation, m.targets, m.peers); }
DS_FIELDS(SnapshotPlan) { io(m.complete, m.protect, m.secure, m.drop); }
DS_FIELDS(ShardPut) {
  io(m.entry, m.crc32, m.manifest);
  io.Check([&] { return CheckEntries({m.entry}, "ShardPut"); });
}
DS_FIELDS(ShardData) { io(m.data); }
DS_FIELDS(ShardGet) {
  io(m.step, m.set, m.shard);
  io.Check([&] {
    return IsSetDigest(m.set) ? Status::OK() : Status::InvalidArgument("ShardGet payload: not a set digest");
  });
}

DS_CODEC(SnapshotSetup)
DS_CODEC(SnapshotReady)
DS_CODEC(SnapshotHeld)
DS_CODEC(Fetch)
DS_CODEC(Fetched)
DS_CODEC(Reshape)
DS_CODEC(Reshaped)
DS_CODEC(WorkerReshape)
DS_CODEC(WorkerReshaped)
DS_CODEC(Replicate)
DS_CODEC(SnapshotPlan)
DS_CODEC(ShardPut)
DS_CODEC(ShardData)
DS_CODEC(ShardGet)

}  // namespace ds::msg
