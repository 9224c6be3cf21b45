#include "wire/protocol.h"

#include <fmt/format.h>

#include "wire/protocol_codec.h"

namespace ds::msg {

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

Bytes WorkerHung::Encode() const { return PayloadWriter().U32(generation).I32(rank).U32(silent_ms).Take(); }
DS_DECODE_BEGIN(WorkerHung)
  m.generation = r.U32();
  m.rank = r.I32();
  m.silent_ms = r.U32();
DS_DECODE_END(WorkerHung)

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

}  // namespace ds::msg
