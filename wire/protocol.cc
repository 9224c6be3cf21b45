// The session, worker, launch tree, progress, hang and store messages of
// wire/protocol.h: one field list each, in wire order (wire_format.md), which
// drives both Encode and Decode (wire/protocol_codec.h).
#include "wire/protocol.h"

#include <fmt/format.h>

#include "wire/protocol_codec.h"

namespace ds::msg {

DS_FIELDS(Hello) { io(m.role, m.name, m.job_id, m.node_index); }
DS_FIELDS(Challenge) { io(m.nonce); }
DS_FIELDS(Auth) { io(m.mac); }
DS_FIELDS(AuthOk) { io(m.mac); }
DS_FIELDS(Error) { io(m.code, m.message); }
DS_FIELDS(Register) {
  io(m.node_index, m.host, m.hostname, m.addr, m.ifname, m.addrs, m.cpus, m.gpus, m.pid, m.heartbeat_addr, m.env);
}
DS_FIELDS(Reserve) { io(m.generation, m.port); }
DS_FIELDS(Reserved) { io(m.generation, m.port, m.error); }
DS_FIELDS(WorkerSpec) { io(m.rank, m.local_rank, m.env); }
// Wire order, not the struct's: the fields added later come last.
DS_FIELDS(Assign) {
  io(m.generation, m.argv, m.working_dir, m.master_addr, m.stop_grace_ms, m.hang_timeout_ms, m.workers,
     m.local_rank_arg, m.bind_cores, m.core_list, m.omp_from_binding, m.local_rank_at, m.pty_columns, m.pty_rows,
     m.preload);
}
DS_FIELDS(WorkerStarted) { io(m.generation, m.rank, m.pid); }
DS_FIELDS(Output) { io(m.generation, m.rank, m.stream, m.line); }
DS_FIELDS(WorkerExited) {
  io(m.generation, m.rank, m.pid, m.exit_code, m.signal, m.hung, m.spawn_failed, m.error_message, m.error_trace);
}
DS_FIELDS(RankStat) {
  io(m.rank, m.step, m.step_micros, m.compute_micros, m.samples_milli, m.save_stall_micros, m.loss_step, m.loss,
     m.accuracy_step, m.accuracy);
}
DS_FIELDS(Progress) { io(m.generation, m.ranks); }
DS_FIELDS(Stop) { io(m.generation); }
DS_FIELDS(Stopped) { io(m.generation); }
DS_FIELDS(Ping) { io(m.sent_micros, m.echo_micros); }
DS_FIELDS(Shutdown) { io(m.exit_code); }
DS_FIELDS(Fenced) { io(m.token, m.type, m.payload); }
DS_FIELDS(ResumedWorker) { io(m.rank, m.pid); }
DS_FIELDS(Resume) { io(m.generation, m.running, m.token_seen, m.workers); }
DS_FIELDS(Coordinators) { io(m.addresses); }
DS_FIELDS(Attached) { io(m.history, m.coordinators); }
DS_FIELDS(AttachLine) { io(m.rank, m.host, m.local_rank, m.stream, m.line); }
DS_FIELDS(AttachStatus) { io(m.text); }
DS_FIELDS(AttachEnd) { io(m.exit_code, m.summary); }
DS_FIELDS(Joined) { io(m.node_index, m.max_nodes); }
DS_FIELDS(StoreSet) { io(m.key, m.value); }
DS_FIELDS(StoreGet) { io(m.key, m.timeout_ms); }
DS_FIELDS(StoreAdd) { io(m.key, m.delta); }
DS_FIELDS(StoreWait) { io(m.keys, m.timeout_ms); }
DS_FIELDS(StoreOk) {}
DS_FIELDS(StoreValue) { io(m.value); }
DS_FIELDS(StoreInt) { io(m.value); }
DS_FIELDS(WorkerHung) { io(m.generation, m.rank, m.silent_ms); }
DS_FIELDS(DumpStacks) { io(m.generation, m.deadline_ms); }
DS_FIELDS(RankStack) { io(m.rank, m.pid, m.tool, m.text); }
DS_FIELDS(Stacks) { io(m.generation, m.ranks); }
DS_FIELDS(AgentCommand) { io(m.node, m.host, m.argv, m.token); }
DS_FIELDS(StartAgents) { io(m.agents); }
DS_FIELDS(AgentEnded) { io(m.node, m.exit_code, m.signal, m.reason); }

DS_CODEC(Hello)
DS_CODEC(Challenge)
DS_CODEC(Auth)
DS_CODEC(AuthOk)
DS_CODEC(Error)
DS_CODEC(Register)
DS_CODEC(Reserve)
DS_CODEC(Reserved)
DS_CODEC(Assign)
DS_CODEC(WorkerStarted)
DS_CODEC(WorkerExited)
DS_CODEC(Progress)
DS_CODEC(Stop)
DS_CODEC(Stopped)
DS_CODEC(Ping)
DS_CODEC(Shutdown)
DS_CODEC(Joined)
DS_CODEC(StoreSet)
DS_CODEC(StoreGet)
DS_CODEC(StoreAdd)
DS_CODEC(StoreWait)
DS_CODEC(StoreOk)
DS_CODEC(StoreValue)
DS_CODEC(StoreInt)
DS_CODEC(WorkerHung)
DS_CODEC(DumpStacks)
DS_CODEC(Fenced)
DS_CODEC(Resume)
DS_CODEC(Coordinators)
DS_CODEC(Attached)
DS_CODEC(AttachLine)
DS_CODEC(AttachStatus)
DS_CODEC(AttachEnd)
DS_CODEC(Stacks)
DS_CODEC(StartAgents)
DS_CODEC(AgentEnded)

// Output's stream is checked once the payload matched exactly (so a
// truncation or trailing bytes say so first).
Bytes Output::Encode() const { return codec::Encode(*this); }
Result<Output> Output::Decode(const Bytes& payload) {
  DS_ASSIGN_OR_RETURN(Output m, codec::Decode<Output>(payload, "Output"));
  const int stream = m.stream & ~kOutputProgress;
  if (stream != 1 && stream != 2)
    return Status::InvalidArgument(fmt::format("Output payload: stream {} (expected 1 or 2, optionally | 0x80)", m.stream));
  return m;
}

}  // namespace ds::msg
