#include "wire/protocol.h"

#include <fmt/format.h>

#include "wire/snapshot_handoff.h"

namespace ds::msg {

#define DS_DECODE_BEGIN(Name) \
  Result<Name> Name::Decode(const Bytes& payload) { \
    PayloadReader r(payload);                       \
    Name m;
#define DS_DECODE_END(Name)                          \
    DS_RETURN_IF_ERROR(r.Finish(#Name));            \
    return m;                                       \
  }

Bytes Hello::Encode() const {
  return PayloadWriter().U8(static_cast<uint8_t>(role)).Str(name).Str(job_id).U32(node_index).Take();
}
DS_DECODE_BEGIN(Hello)
  m.role = static_cast<wire::Role>(r.U8());
  m.name = r.Str();
  m.job_id = r.Str();
  m.node_index = r.U32();
DS_DECODE_END(Hello)

Bytes Challenge::Encode() const { return PayloadWriter().Blob(nonce).Take(); }
DS_DECODE_BEGIN(Challenge) m.nonce = r.Blob(); DS_DECODE_END(Challenge)

Bytes Auth::Encode() const { return PayloadWriter().Blob(mac).Take(); }
DS_DECODE_BEGIN(Auth) m.mac = r.Blob(); DS_DECODE_END(Auth)

Bytes AuthOk::Encode() const { return PayloadWriter().Blob(mac).Take(); }
DS_DECODE_BEGIN(AuthOk) m.mac = r.Blob(); DS_DECODE_END(AuthOk)

Bytes Error::Encode() const { return PayloadWriter().U32(code).Str(message).Take(); }
DS_DECODE_BEGIN(Error) m.code = r.U32(); m.message = r.Str(); DS_DECODE_END(Error)

Bytes Register::Encode() const {
  return PayloadWriter().U32(node_index).Str(host).Str(hostname).Str(addr).Str(ifname)
      .StrList(addrs).U32(cpus).U32(gpus).I32(pid).Str(heartbeat_addr).KvList(env).Take();
}
DS_DECODE_BEGIN(Register)
  m.node_index = r.U32();
  m.host = r.Str();
  m.hostname = r.Str();
  m.addr = r.Str();
  m.ifname = r.Str();
  m.addrs = r.StrList();
  m.cpus = r.U32();
  m.gpus = r.U32();
  m.pid = r.I32();
  m.heartbeat_addr = r.Str();
  m.env = r.KvList();
DS_DECODE_END(Register)

Bytes Reserve::Encode() const { return PayloadWriter().U32(generation).U32(port).Take(); }
DS_DECODE_BEGIN(Reserve) m.generation = r.U32(); m.port = r.U32(); DS_DECODE_END(Reserve)

Bytes Reserved::Encode() const { return PayloadWriter().U32(generation).U32(port).Str(error).Take(); }
DS_DECODE_BEGIN(Reserved)
  m.generation = r.U32();
  m.port = r.U32();
  m.error = r.Str();
DS_DECODE_END(Reserved)

Bytes Assign::Encode() const {
  PayloadWriter w;
  w.U32(generation).StrList(argv).Str(working_dir).Str(master_addr).U32(stop_grace_ms)
      .U32(hang_timeout_ms).U32(static_cast<uint32_t>(workers.size()));
  for (const auto& ws : workers) w.I32(ws.rank).I32(ws.local_rank).KvList(ws.env);
  w.U8(local_rank_arg).U8(bind_cores).Str(core_list).U8(omp_from_binding).I32(local_rank_at);
  w.U32(pty_columns).U32(pty_rows).StrList(preload);
  return w.Take();
}
DS_DECODE_BEGIN(Assign)
  m.generation = r.U32();
  m.argv = r.StrList();
  m.working_dir = r.Str();
  m.master_addr = r.Str();
  m.stop_grace_ms = r.U32();
  m.hang_timeout_ms = r.U32();
  uint32_t n = r.U32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    WorkerSpec ws;
    ws.rank = r.I32();
    ws.local_rank = r.I32();
    ws.env = r.KvList();
    m.workers.push_back(std::move(ws));
  }
  m.local_rank_arg = r.U8();
  m.bind_cores = r.U8();
  m.core_list = r.Str();
  m.omp_from_binding = r.U8();
  m.local_rank_at = r.I32();
  m.pty_columns = r.U32();
  m.pty_rows = r.U32();
  m.preload = r.StrList();
DS_DECODE_END(Assign)

Bytes WorkerStarted::Encode() const { return PayloadWriter().U32(generation).I32(rank).I32(pid).Take(); }
DS_DECODE_BEGIN(WorkerStarted)
  m.generation = r.U32();
  m.rank = r.I32();
  m.pid = r.I32();
DS_DECODE_END(WorkerStarted)

Bytes Output::Encode() const {
  return PayloadWriter().U32(generation).I32(rank).U8(stream).Str(line).Take();
}
Result<Output> Output::Decode(const Bytes& payload) {
  PayloadReader r(payload);
  Output m;
  m.generation = r.U32();
  m.rank = r.I32();
  m.stream = r.U8();
  m.line = r.Str();
  DS_RETURN_IF_ERROR(r.Finish("Output"));
  const int stream = m.stream & ~kOutputProgress;
  if (stream != 1 && stream != 2)
    return Status::InvalidArgument(fmt::format("Output payload: stream {} (expected 1 or 2, optionally | 0x80)", m.stream));
  return m;
}

Bytes WorkerExited::Encode() const {
  return PayloadWriter().U32(generation).I32(rank).I32(pid).I32(exit_code).I32(signal).U8(hung)
      .U8(spawn_failed).Str(error_message).Str(error_trace).Take();
}
DS_DECODE_BEGIN(WorkerExited)
  m.generation = r.U32();
  m.rank = r.I32();
  m.pid = r.I32();
  m.exit_code = r.I32();
  m.signal = r.I32();
  m.hung = r.U8();
  m.spawn_failed = r.U8();
  m.error_message = r.Str();
  m.error_trace = r.Str();
DS_DECODE_END(WorkerExited)

Bytes Progress::Encode() const {
  PayloadWriter w;
  w.U32(generation).U32(static_cast<uint32_t>(ranks.size()));
  for (const auto& r : ranks)
    w.I32(r.rank).I64(r.step).I64(r.step_micros).I64(r.compute_micros).I64(r.samples_milli).I64(r.save_stall_micros);
  return w.Take();
}
DS_DECODE_BEGIN(Progress)
  m.generation = r.U32();
  uint32_t n = r.U32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    RankStat s;
    s.rank = r.I32();
    s.step = r.I64();
    s.step_micros = r.I64();
    s.compute_micros = r.I64();
    s.samples_milli = r.I64();
    s.save_stall_micros = r.I64();
    if (r.ok()) m.ranks.push_back(s);
  }
DS_DECODE_END(Progress)

Bytes Stop::Encode() const { return PayloadWriter().U32(generation).Take(); }
DS_DECODE_BEGIN(Stop) m.generation = r.U32(); DS_DECODE_END(Stop)
Bytes Stopped::Encode() const { return PayloadWriter().U32(generation).Take(); }
DS_DECODE_BEGIN(Stopped) m.generation = r.U32(); DS_DECODE_END(Stopped)
Bytes Ping::Encode() const {
  return PayloadWriter().I64(static_cast<int64_t>(sent_micros)).I64(static_cast<int64_t>(echo_micros)).Take();
}
DS_DECODE_BEGIN(Ping)
  m.sent_micros = static_cast<uint64_t>(r.I64());
  m.echo_micros = static_cast<uint64_t>(r.I64());
DS_DECODE_END(Ping)
Bytes Shutdown::Encode() const { return PayloadWriter().I32(exit_code).Take(); }
DS_DECODE_BEGIN(Shutdown) m.exit_code = r.I32(); DS_DECODE_END(Shutdown)

Bytes StoreSet::Encode() const { return PayloadWriter().Str(key).Blob(value).Take(); }
DS_DECODE_BEGIN(StoreSet) m.key = r.Str(); m.value = r.Blob(); DS_DECODE_END(StoreSet)
Bytes StoreGet::Encode() const { return PayloadWriter().Str(key).U32(timeout_ms).Take(); }
DS_DECODE_BEGIN(StoreGet) m.key = r.Str(); m.timeout_ms = r.U32(); DS_DECODE_END(StoreGet)
Bytes StoreAdd::Encode() const { return PayloadWriter().Str(key).I64(delta).Take(); }
DS_DECODE_BEGIN(StoreAdd) m.key = r.Str(); m.delta = r.I64(); DS_DECODE_END(StoreAdd)
Bytes StoreWait::Encode() const { return PayloadWriter().StrList(keys).U32(timeout_ms).Take(); }
DS_DECODE_BEGIN(StoreWait) m.keys = r.StrList(); m.timeout_ms = r.U32(); DS_DECODE_END(StoreWait)
Bytes StoreOk::Encode() const { return {}; }
DS_DECODE_BEGIN(StoreOk) DS_DECODE_END(StoreOk)
Bytes StoreValue::Encode() const { return PayloadWriter().Blob(value).Take(); }
DS_DECODE_BEGIN(StoreValue) m.value = r.Blob(); DS_DECODE_END(StoreValue)
Bytes StoreInt::Encode() const { return PayloadWriter().I64(value).Take(); }
DS_DECODE_BEGIN(StoreInt) m.value = r.I64(); DS_DECODE_END(StoreInt)

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
                     c.skipped, c.cpu_micros})
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
                      &c.skipped, &c.cpu_micros})
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

Bytes DumpStacks::Encode() const { return PayloadWriter().U32(generation).U32(deadline_ms).Take(); }
DS_DECODE_BEGIN(DumpStacks)
  m.generation = r.U32();
  m.deadline_ms = r.U32();
DS_DECODE_END(DumpStacks)

Bytes Stacks::Encode() const {
  PayloadWriter w;
  w.U32(generation).U32(static_cast<uint32_t>(ranks.size()));
  for (const auto& s : ranks) w.I32(s.rank).I32(s.pid).Str(s.tool).Str(s.text);
  return w.Take();
}
DS_DECODE_BEGIN(Stacks)
  m.generation = r.U32();
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) {
    RankStack s;
    s.rank = r.I32();
    s.pid = r.I32();
    s.tool = r.Str();
    s.text = r.Str();
    m.ranks.push_back(std::move(s));
  }
DS_DECODE_END(Stacks)

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
DS_DECODE_END(Replicate)

Bytes StartAgents::Encode() const {
  PayloadWriter w;
  w.U32(static_cast<uint32_t>(agents.size()));
  for (const auto& a : agents) w.U32(a.node).Str(a.host).StrList(a.argv).Str(a.token);
  return w.Take();
}
DS_DECODE_BEGIN(StartAgents)
  for (uint32_t n = r.U32(); r.ok() && n > 0; --n) {
    AgentCommand a;
    a.node = r.U32();
    a.host = r.Str();
    a.argv = r.StrList();
    a.token = r.Str();
    m.agents.push_back(std::move(a));
  }
DS_DECODE_END(StartAgents)

Bytes Joined::Encode() const { return PayloadWriter().U32(node_index).U32(max_nodes).Take(); }
DS_DECODE_BEGIN(Joined) m.node_index = r.U32(); m.max_nodes = r.U32(); DS_DECODE_END(Joined)

Bytes AgentEnded::Encode() const { return PayloadWriter().U32(node).I32(exit_code).I32(signal).Str(reason).Take(); }
DS_DECODE_BEGIN(AgentEnded) m.node = r.U32(); m.exit_code = r.I32(); m.signal = r.I32(); m.reason = r.Str(); DS_DECODE_END(AgentEnded)

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
