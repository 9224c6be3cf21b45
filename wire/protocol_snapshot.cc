// The snapshot and in-place recovery messages of wire/protocol.h (wire_format.md
// "Snapshots", "In-place recovery"): a save's identity on every message that names
// one, refused at decoding when it could not name a directory.
#include <fmt/format.h>

#include "common/strings.h"
#include "wire/protocol.h"
#include "wire/protocol_codec.h"
#include "wire/snapshot_handoff.h"

namespace ds::msg {
namespace {

PayloadWriter& PutId(PayloadWriter& w, const SnapshotId& id) {
  return w.Str(id.run).U32(id.world).U8(id.zero_stage).Str(id.config).Str(id.set);
}
SnapshotId GetId(PayloadReader& r) {
  SnapshotId id;
  id.run = r.Str();
  id.world = r.U32();
  id.zero_stage = r.U8();
  id.config = r.Str();
  id.set = r.Str();
  return id;
}
// An id names directories and files on the agents' disks: only the shapes
// snapshot_handoff.h allows get past decoding.
Status CheckId(const PayloadReader& r, const SnapshotId& id, const char* what) {
  if (!r.ok()) return Status::OK();  // Finish reports the truncation
  const std::string problem = SnapshotIdProblem(id);
  if (problem.empty()) return Status::OK();
  return Status::InvalidArgument(fmt::format("{} payload: {}", what, problem));
}

// Fetch's and Reshape's shard sources: u32 n, n x {u32 shard, u32 node, str peer_addr}.
PayloadWriter& PutSources(PayloadWriter& w, const std::vector<ShardSource>& sources) {
  w.U32(static_cast<uint32_t>(sources.size()));
  for (const auto& s : sources) w.U32(s.shard).U32(s.node).Str(s.peer_addr);
  return w;
}
std::vector<ShardSource> GetSources(PayloadReader& r) {
  std::vector<ShardSource> sources;
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) {
    ShardSource s;
    s.shard = r.U32();
    s.node = r.U32();
    s.peer_addr = r.Str();
    sources.push_back(std::move(s));
  }
  return sources;
}
PayloadWriter& PutEntry(PayloadWriter& w, const ShardEntry& e) {
  w.I64(e.step).U32(e.shard);
  return PutId(w, e.id).U32(e.origin).U8(e.tier).I64(static_cast<int64_t>(e.bytes));
}
ShardEntry GetEntry(PayloadReader& r) {
  ShardEntry e;
  e.step = r.I64();
  e.shard = r.U32();
  e.id = GetId(r);
  e.origin = r.U32();
  e.tier = r.U8();
  e.bytes = static_cast<uint64_t>(r.I64());
  return e;
}
void PutEntries(PayloadWriter& w, const std::vector<ShardEntry>& v) {
  w.U32(static_cast<uint32_t>(v.size()));
  for (const auto& e : v) PutEntry(w, e);
}
std::vector<ShardEntry> GetEntries(PayloadReader& r) {
  std::vector<ShardEntry> v;
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) v.push_back(GetEntry(r));
  return v;
}
Status CheckEntries(const PayloadReader& r, const std::vector<ShardEntry>& v, const char* what) {
  for (const ShardEntry& e : v) {
    DS_RETURN_IF_ERROR(CheckId(r, e.id, what));
    if (r.ok() && e.shard >= e.id.world)
      return Status::InvalidArgument(fmt::format("{} payload: shard {} of a world of {}", what, e.shard, e.id.world));
  }
  return Status::OK();
}
}  // namespace

Bytes SnapshotSetup::Encode() const { return PayloadWriter().Str(dir).U32(keep).Str(peer_key).Str(run_id).Take(); }
DS_DECODE_BEGIN(SnapshotSetup)
  m.dir = r.Str();
  m.keep = r.U32();
  m.peer_key = r.Str();
  m.run_id = r.Str();
DS_DECODE_END(SnapshotSetup)

Bytes SnapshotReady::Encode() const { return PayloadWriter().Str(peer_addr).Str(memory_dir).Str(error).Take(); }
DS_DECODE_BEGIN(SnapshotReady) m.peer_addr = r.Str(); m.memory_dir = r.Str(); m.error = r.Str(); DS_DECODE_END(SnapshotReady)

Bytes SnapshotHeld::Encode() const {
  PayloadWriter w;
  PutEntries(w, added);
  PutEntries(w, removed);
  const SnapshotCounters& c = counters;
  for (uint64_t v : {c.handoffs, c.handoff_bytes, c.sent_bytes, c.sent_micros, c.persisted_bytes, c.persist_micros,
                     c.budget_wait_micros, c.cpu_micros})
    w.I64(static_cast<int64_t>(v));
  return w.Take();
}
DS_DECODE_BEGIN(SnapshotHeld)
  m.added = GetEntries(r);
  m.removed = GetEntries(r);
  DS_RETURN_IF_ERROR(CheckEntries(r, m.added, "SnapshotHeld"));
  DS_RETURN_IF_ERROR(CheckEntries(r, m.removed, "SnapshotHeld"));
  SnapshotCounters& c = m.counters;
  for (uint64_t* v : {&c.handoffs, &c.handoff_bytes, &c.sent_bytes, &c.sent_micros, &c.persisted_bytes, &c.persist_micros,
                      &c.budget_wait_micros, &c.cpu_micros})
    *v = static_cast<uint64_t>(r.I64());
DS_DECODE_END(SnapshotHeld)

Bytes Fetch::Encode() const {
  PayloadWriter w;
  w.U32(generation).I64(step);
  PutSources(PutId(w, id), sources);
  return w.Take();
}
DS_DECODE_BEGIN(Fetch)
  m.generation = r.U32();
  m.step = r.I64();
  m.id = GetId(r);
  if (m.step >= 0) DS_RETURN_IF_ERROR(CheckId(r, m.id, "Fetch"));
  m.sources = GetSources(r);
DS_DECODE_END(Fetch)

Bytes Fetched::Encode() const {
  return PayloadWriter().U32(generation).I64(step).Str(set).I64(static_cast<int64_t>(bytes)).U32(micros).Str(error).Take();
}
DS_DECODE_BEGIN(Fetched)
  m.generation = r.U32();
  m.step = r.I64();
  m.set = r.Str();
  m.bytes = static_cast<uint64_t>(r.I64());
  m.micros = r.U32();
  m.error = r.Str();
DS_DECODE_END(Fetched)

Bytes Reshape::Encode() const {
  PayloadWriter w;
  w.U32(generation).I64(step);
  PutId(w, id).U32(world).U32(static_cast<uint32_t>(moves.size()));
  for (const auto& mv : moves) w.I32(mv.old_rank).I32(mv.new_rank);
  PutSources(w, sources);
  return w.U32(deadline_ms).Take();
}
DS_DECODE_BEGIN(Reshape)
  m.generation = r.U32();
  m.step = r.I64();
  m.id = GetId(r);
  DS_RETURN_IF_ERROR(CheckId(r, m.id, "Reshape"));
  m.world = r.U32();
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) {
    RankMove mv;
    mv.old_rank = r.I32();
    mv.new_rank = r.I32();
    m.moves.push_back(mv);
  }
  m.sources = GetSources(r);
  m.deadline_ms = r.U32();
DS_DECODE_END(Reshape)

Bytes Reshaped::Encode() const {
  PayloadWriter w;
  w.U32(generation).U32(static_cast<uint32_t>(workers.size()));
  for (const auto& v : workers) w.I32(v.rank).U8(v.ok).Str(v.why);
  return w.Str(error).U32(micros).Take();
}
DS_DECODE_BEGIN(Reshaped)
  m.generation = r.U32();
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) {
    RankVerdict v;
    v.rank = r.I32();
    v.ok = r.U8();
    v.why = r.Str();
    m.workers.push_back(std::move(v));
  }
  m.error = r.Str();
  m.micros = r.U32();
DS_DECODE_END(Reshaped)

Bytes WorkerReshape::Encode() const {
  return PayloadWriter().U32(generation).I32(rank).U32(world).I64(step).Str(set).Take();
}
DS_DECODE_BEGIN(WorkerReshape)
  m.generation = r.U32();
  m.rank = r.I32();
  m.world = r.U32();
  m.step = r.I64();
  m.set = r.Str();
DS_DECODE_END(WorkerReshape)

Bytes WorkerReshaped::Encode() const {
  return PayloadWriter().U32(generation).U8(ok).Str(why).U32(micros).Take();
}
DS_DECODE_BEGIN(WorkerReshaped)
  m.generation = r.U32();
  m.ok = r.U8();
  m.why = r.Str();
  m.micros = r.U32();
DS_DECODE_END(WorkerReshaped)

Bytes Replicate::Encode() const {
  PayloadWriter w;
  w.U32(generation).U32(static_cast<uint32_t>(targets.size()));
  for (const auto& t : targets) w.U32(t.node).Str(t.peer_addr);
  w.StrList(peers);
  return w.Take();
}
DS_DECODE_BEGIN(Replicate)
  m.generation = r.U32();
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) {
    ReplicaPeer t;
    t.node = r.U32();
    t.peer_addr = r.Str();
    m.targets.push_back(std::move(t));
  }
  m.peers = r.StrList();
DS_DECODE_END(Replicate)

namespace {
PayloadWriter& PutSave(PayloadWriter& w, const SaveRef& s) { return w.I64(s.step).Str(s.set); }
SaveRef GetSave(PayloadReader& r) {
  SaveRef s;
  s.step = r.I64();
  s.set = r.Str();
  return s;
}
// A save reference names a directory: a set digest, or nothing for step -1.
Status CheckSave(const PayloadReader& r, const SaveRef& s) {
  if (!r.ok()) return Status::OK();
  if (s.step < 0 ? s.set.empty() : IsSetDigest(s.set)) return Status::OK();
  return Status::InvalidArgument(fmt::format("SnapshotPlan payload: step {} with set '{}' (expected 16 hex digits, "
                                             "or none for step -1)", s.step, Printable(s.set)));
}
}  // namespace

Bytes SnapshotPlan::Encode() const {
  PayloadWriter w;
  w.I64(complete).U32(static_cast<uint32_t>(protect.size()));
  for (const SaveRef& s : protect) PutSave(w, s);
  PutSave(w, secure).U32(static_cast<uint32_t>(drop.size()));
  for (const SaveRef& s : drop) PutSave(w, s);
  return w.Take();
}
DS_DECODE_BEGIN(SnapshotPlan)
  m.complete = r.I64();
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) {
    m.protect.push_back(GetSave(r));
    DS_RETURN_IF_ERROR(CheckSave(r, m.protect.back()));
  }
  m.secure = GetSave(r);
  DS_RETURN_IF_ERROR(CheckSave(r, m.secure));
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) {
    m.drop.push_back(GetSave(r));
    DS_RETURN_IF_ERROR(CheckSave(r, m.drop.back()));
  }
DS_DECODE_END(SnapshotPlan)

Bytes ShardPut::Encode() const {
  PayloadWriter w;
  PutEntry(w, entry).U32(crc32).Str(manifest);
  return w.Take();
}
DS_DECODE_BEGIN(ShardPut)
  m.entry = GetEntry(r);
  m.crc32 = r.U32();
  m.manifest = r.Str();
  DS_RETURN_IF_ERROR(CheckEntries(r, {m.entry}, "ShardPut"));
DS_DECODE_END(ShardPut)

Bytes ShardData::Encode() const { return PayloadWriter().Blob(data).Take(); }
DS_DECODE_BEGIN(ShardData) m.data = r.Blob(); DS_DECODE_END(ShardData)

Bytes ShardGet::Encode() const { return PayloadWriter().I64(step).Str(set).U32(shard).Take(); }
DS_DECODE_BEGIN(ShardGet)
  m.step = r.I64();
  m.set = r.Str();
  m.shard = r.U32();
  if (r.ok() && !IsSetDigest(m.set)) return Status::InvalidArgument("ShardGet payload: not a set digest");
DS_DECODE_END(ShardGet)

}  // namespace ds::msg
