// The messages of the dslaunch protocol (types in wire_format.h, prose in
// wire_format.md) as plain structs with Encode()/Decode(). Decode fails with
// InvalidArgument("truncated <Msg> payload" / "... trailing bytes") on any
// payload that does not match exactly. Value types, thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "wire/frame_io.h"

namespace ds::msg {

#define DS_MESSAGE(Name)            \
  Bytes Encode() const;             \
  static Result<Name> Decode(const Bytes& payload)

struct Hello {
  wire::Role role = wire::Role::kAgent;
  std::string name;        // host name (agent) or a client label (store)
  std::string job_id;
  uint32_t node_index = 0;
  DS_MESSAGE(Hello);
};
struct Challenge { Bytes nonce; DS_MESSAGE(Challenge); };
struct Auth { Bytes mac; DS_MESSAGE(Auth); };
struct AuthOk { Bytes mac; DS_MESSAGE(AuthOk); };
struct Error {
  uint32_t code = 0;       // wire::ErrorCode
  std::string message;
  DS_MESSAGE(Error);
};

// Node facts, sent once after the handshake.
struct Register {
  uint32_t node_index = 0;
  std::string host;            // as written in the hostfile (--host)
  std::string hostname;        // gethostname()
  std::string addr;            // the agent's address that routes to the coordinator
  std::string ifname;          // the interface holding `addr`
  std::vector<std::string> addrs;  // every non-loopback IPv4/IPv6 address
  uint32_t cpus = 0;
  uint32_t gpus = 0;           // /dev/nvidia[0-9]* visible
  int32_t pid = 0;
  std::string heartbeat_addr;  // host:port of the agent's UDP step-heartbeat socket
  KeyValues env;               // the agent's values of variables WorkerEnv must not override
  DS_MESSAGE(Register);
};
struct Reserve { uint32_t generation = 0; uint32_t port = 0; DS_MESSAGE(Reserve); };  // port 0 = any
struct Reserved {
  uint32_t generation = 0;
  uint32_t port = 0;
  std::string error;           // "" on success
  DS_MESSAGE(Reserved);
};
struct WorkerSpec {
  int32_t rank = 0;
  int32_t local_rank = 0;
  KeyValues env;               // added to (and overriding) the agent's environment
};
struct Assign {
  uint32_t generation = 0;
  std::vector<std::string> argv;  // the worker command, exec'd directly (no shell)
  std::string working_dir;        // "" = the agent's
  std::string master_addr;        // for the interface lookup (NCCL/GLOO_SOCKET_IFNAME)
  uint32_t stop_grace_ms = static_cast<uint32_t>(kDefaultStopGrace * 1000);  // SIGTERM -> SIGKILL
  uint32_t hang_timeout_ms = static_cast<uint32_t>(kDefaultHangTimeout * 1000);  // 0 = off
  std::vector<WorkerSpec> workers;
  uint8_t local_rank_arg = 0;     // add --local_rank=<local rank> to each worker's argv ...
  int32_t local_rank_at = -1;     // ... before argv[local_rank_at] (DeepSpeed: right after the script); -1 = at the end
  uint8_t bind_cores = 0;         // pin local rank r of n to the r-th of n slices of the cores
  std::string core_list;          // the cores to share out ("0-3,8-11"); "" = the agent's allowed CPUs
  uint8_t omp_from_binding = 0;   // with bind_cores: OMP_NUM_THREADS = the slice's size (nobody set it)
  uint32_t pty_columns = 0;       // > 0: each worker's stdout and stderr are pseudo-terminals this wide ...
  uint32_t pty_rows = 0;          // ... and this tall (--pty)
  std::vector<std::string> preload;  // python: preload: modules warm spares import (agent/warm/spares.h); empty = none
  DS_MESSAGE(Assign);
};
struct WorkerStarted { uint32_t generation = 0; int32_t rank = 0; int32_t pid = 0; DS_MESSAGE(WorkerStarted); };
// Output.stream's flag: `line` is the visible text of the line in progress
// (a carriage-return update), not a complete line. Valid streams are 1, 2,
// and either with this flag; Decode refuses any other value.
constexpr uint8_t kOutputProgress = 0x80;
struct Output {
  uint32_t generation = 0;
  int32_t rank = 0;
  uint8_t stream = 1;          // 1 stdout, 2 stderr, optionally | kOutputProgress
  std::string line;            // without the newline, '\r' updates collapsed
  DS_MESSAGE(Output);
};
struct WorkerExited {
  uint32_t generation = 0;
  int32_t rank = 0;
  int32_t pid = 0;
  int32_t exit_code = 0;       // valid when signal == 0
  int32_t signal = 0;          // the terminating signal, 0 if it exited
  uint8_t hung = 0;            // killed by the agent for a stalled step heartbeat
  uint8_t spawn_failed = 0;    // exec failed (exit_code 127)
  // From the worker's TORCHELASTIC_ERROR_FILE (common/torch_error_file.h),
  // when it failed and wrote one; "" otherwise.
  std::string error_message;   // at most kMaxErrorMessage bytes (the head)
  std::string error_trace;     // at most kMaxErrorTrace bytes (the traceback's tail)
  DS_MESSAGE(WorkerExited);
};
// Snapshots (wire_format.md "Snapshots"): agent-owned copies of
// the workers' checkpoint shards, replicated between agents.
struct SnapshotSetup {            // coord -> agent, once after Register
  std::string dir;                // this node's checkpoint directory ("" = none)
  uint32_t keep = 2;              // newest steps of this run kept (memory and disk)
  std::string peer_key;           // HMAC key of agent <-> agent connections
  std::string run_id;             // this run's (DSLAUNCH_RUN_ID): it prunes only its own steps
  DS_MESSAGE(SnapshotSetup);
};
struct SnapshotReady {            // agent -> coord: answer to SnapshotSetup
  std::string peer_addr;          // host:port of the agent's shard server
  std::string memory_dir;         // the per-job memory directory (DSLAUNCH_SNAPSHOT_DIR)
  std::string error;              // "" on success (then snapshots are off on this node)
  DS_MESSAGE(SnapshotReady);
};
// What one save of a step is (checkpoint_format.md "Run identity"): shards
// load together only when all of this is equal. `set` pins the save byte
// for byte: the digest of the step's manifest, which lists every shard's
// size and crc32. Valid values: wire/snapshot_handoff.h.
struct SnapshotId {
  std::string run;                // the run that saved it (DSLAUNCH_RUN_ID, hex)
  uint32_t world = 0;             // the ranks that saved it: shards 0..world-1
  uint8_t zero_stage = 0;
  std::string config;             // the model/optimizer config hash (manifest config_hash)
  std::string set;                // ManifestDigest of the step's manifest.json
  auto operator<=>(const SnapshotId&) const = default;
};
struct ShardEntry {
  int64_t step = 0;
  uint32_t shard = 0;             // the rank that wrote it
  SnapshotId id;                  // the save it belongs to
  uint32_t origin = 0;            // node index whose worker wrote it
  uint8_t tier = 1;               // 1 memory, 2 the node's disk only
  uint64_t bytes = 0;
};
struct SnapshotCounters {         // an agent's totals since it started
  uint64_t handoffs = 0;          // shards its workers handed over
  uint64_t handoff_bytes = 0;
  uint64_t sent_bytes = 0;        // replicas sent to peers
  uint64_t sent_micros = 0;       // time spent sending them
  uint64_t persisted_bytes = 0;   // written to the node's disk
  uint64_t persist_micros = 0;
  uint64_t budget_wait_micros = 0; // time its replication waited for its CPU budget (snapshot_keeper.h)
  uint64_t cpu_micros = 0;        // the agent process's CPU time (user + system, all its threads)
};
struct SnapshotHeld {             // agent -> coord: shards it now holds / dropped
  std::vector<ShardEntry> added;
  std::vector<ShardEntry> removed;
  SnapshotCounters counters;
  DS_MESSAGE(SnapshotHeld);
};
struct ShardSource { uint32_t shard = 0; uint32_t node = 0; std::string peer_addr; };
struct Fetch {                    // coord -> agent: hold every shard of `step` before the generation
  uint32_t generation = 0;
  int64_t step = 0;                  // -1: start fresh (`id` empty)
  SnapshotId id;                     // the save of `step` to gather, and no other
  std::vector<ShardSource> sources;  // where each shard this agent lacks is
  DS_MESSAGE(Fetch);
};
struct Fetched {                  // agent -> coord
  uint32_t generation = 0;
  int64_t step = 0;
  std::string set;                // Fetch.id.set ("" for a fresh start)
  uint64_t bytes = 0;             // fetched from peers
  uint32_t micros = 0;            // time it took
  std::string error;              // "" on success
  DS_MESSAGE(Fetched);
};
struct ReplicaPeer { uint32_t node = 0; std::string peer_addr; };
struct Replicate {                // coord -> agent, per generation: copy new shards to these nodes
  uint32_t generation = 0;
  std::vector<ReplicaPeer> targets;
  std::vector<std::string> peers; // every node's shard server: who may connect to this agent's (peer_link.h)
  DS_MESSAGE(Replicate);
};
// One save, by step and set (step -1: none).
struct SaveRef {
  int64_t step = -1;
  std::string set;
  auto operator<=>(const SaveRef&) const = default;
};
struct SnapshotPlan {             // coord -> agent, whenever it changes (launcher/coordinator/recovery_point.h)
  int64_t complete = -1;          // the newest step every rank handed over: saves up to it count toward `keep`
  std::vector<SaveRef> protect;   // saves no copy of which may be dropped (the recovery point, the one being secured)
  SaveRef secure;                 // the one save whose own shards the agent persists and replicates now
  std::vector<SaveRef> drop;      // saves of a timeline the running generation abandoned: dropped now
  DS_MESSAGE(SnapshotPlan);
};
// Agent <-> agent (role kPeer, key SnapshotSetup.peer_key): one request per connection.
struct ShardPut {                 // then the shard's bytes in ShardData frames
  ShardEntry entry;
  uint32_t crc32 = 0;
  std::string manifest;           // the step's manifest.json
  DS_MESSAGE(ShardPut);
};
struct ShardData { Bytes data; DS_MESSAGE(ShardData); };
struct ShardGet { int64_t step = 0; std::string set; uint32_t shard = 0; DS_MESSAGE(ShardGet); };
// The launch tree (--fanout-tree; wire_format.md "Launch tree").
struct AgentCommand {
  uint32_t node = 0;              // the node whose agent this starts
  std::string host;               // its hostfile name (for messages)
  std::vector<std::string> argv;  // run as is (an ssh command line); `token` goes on its stdin
  std::string token;              // that node's own agent token (one per node, never the parent's)
};
struct StartAgents {              // coord -> a registered agent
  std::vector<AgentCommand> agents;
  DS_MESSAGE(StartAgents);
};
struct AgentEnded {               // agent -> coord: one of those commands ended
  uint32_t node = 0;
  int32_t exit_code = 0;          // valid when signal == 0 (ssh: 255 = ssh's own failure)
  int32_t signal = 0;
  std::string reason;             // its last stderr lines, at most kMaxAgentEndedReason bytes
  DS_MESSAGE(AgentEnded);
};
inline constexpr size_t kMaxAgentEndedReason = 1024;
// Progress summaries (wire_format.md "Progress summaries"): agent
// -> coord, sent with its Ping, for the ranks that stepped since the last one.
struct RankStat {
  int32_t rank = 0;
  int64_t step = 0;               // the last step it reported
  int64_t step_micros = 0;        // mean step time over the agent's window; 0: unknown
  int64_t compute_micros = -1;    // mean compute time per step; -1: unknown
  int64_t samples_milli = -1;     // samples per second x 1000; -1: unknown
  int64_t save_stall_micros = -1; // the rank's last snapshot save's stall; -1: none said
  int64_t loss_step = -1;         // the step of the newest loss the rank said; -1: none
  double loss = 0;                // ... that loss (f64 bits on the wire)
  int64_t accuracy_step = -1;     // the step of the newest evaluation accuracy it said; -1: none
  double accuracy = 0;            // ... that accuracy, 0..1
};
struct Progress {
  uint32_t generation = 0;
  std::vector<RankStat> ranks;
  DS_MESSAGE(Progress);
};
// In-place recovery (checkpoint_format.md "In-place recovery",
// wire_format.md "In-place recovery"). Coordinator <-> agent:
struct RankMove { int32_t old_rank = 0; int32_t new_rank = 0; };
struct Reshape {                  // coord -> a surviving agent: go on in generation `generation`
  uint32_t generation = 0;        // the new generation (the old one + 1)
  int64_t step = 0;               // the save every rank rolls back to ...
  SnapshotId id;                  // ... and which save of that step (as Fetch)
  uint32_t world = 0;             // the new world size
  std::vector<RankMove> moves;    // this node's surviving workers: old rank -> new rank
  std::vector<ShardSource> sources;  // shards of the save this node lacks, and where they are (as Fetch)
  uint32_t deadline_ms = 0;       // every worker answers within this, or the reshape failed
  // The store the new communicators meet in, when it may not be the one the
  // workers hold (the coordinator took their generation over from a lost
  // one, whose store went with it); "" = the one they hold.
  std::string store_addr;         // host:port (DSLAUNCH_STORE_ADDR)
  std::string store_token;        // its token for the new generation (DSLAUNCH_STORE_TOKEN)
  DS_MESSAGE(Reshape);
};
struct RankVerdict {
  int32_t rank = 0;               // the new rank
  uint8_t ok = 0;
  std::string why;                // when !ok: what went wrong, for the fallback's line
};
struct Reshaped {                 // agent -> coord: answer to Reshape
  uint32_t generation = 0;
  std::vector<RankVerdict> workers;  // one per move, in the order of Reshape.moves
  std::string error;              // "" or why the node could not take part (shards not gathered, ...)
  uint32_t micros = 0;            // Reshape received -> last worker answered
  DS_MESSAGE(Reshaped);
};
// Hangs (wire_format.md "Hang stacks"). Coordinator <-> agent:
struct WorkerHung {               // agent -> coord: a worker made no step for elastic.hang_timeout
  uint32_t generation = 0;
  int32_t rank = 0;
  uint32_t silent_ms = 0;         // since its last step beat
  DS_MESSAGE(WorkerHung);
};
struct DumpStacks {               // coord -> agent: the job is hung, take every worker's stacks
  uint32_t generation = 0;
  uint32_t deadline_ms = 0;       // answer within this; a worker's dump still running then is cut off
  DS_MESSAGE(DumpStacks);
};
struct RankStack {
  int32_t rank = 0;
  int32_t pid = 0;
  std::string tool;               // "eu-stack", "gdb", or "" when no tool could take it
  std::string text;               // the tool's output (at most kMaxStackBytes), or why there is none
};
inline constexpr size_t kMaxStackBytes = 32 * 1024;  // per rank: a deeper stack is cut, marked "[cut]"
// A CPython worker's text (agent/stacks/python_stack.h) starts with this line, then
// faulthandler's dump of its Python threads, a blank line, kNativeFramesHeader
// " (<tool>):" and the tool's output; or with "Python frames: none (<why>)".
inline constexpr char kPythonFramesHeader[] = "Python frames (faulthandler's dump via gdb):";
inline constexpr char kNativeFramesHeader[] = "Native frames";
struct Stacks {                   // agent -> coord: answer to DumpStacks, one entry per running worker
  uint32_t generation = 0;
  std::vector<RankStack> ranks;
  DS_MESSAGE(Stacks);
};
// Agent <-> one of its dstrain workers, over the worker's control channel
// (DSLAUNCH_CONTROL_FD, a SOCK_SEQPACKET pair; one frame per packet, same
// header; no handshake: only the agent holds the other end).
struct WorkerReshape {            // agent -> worker
  uint32_t generation = 0;        // store keys of the new communicator live under this generation
  int32_t rank = 0;               // the worker's new rank ...
  uint32_t world = 0;             // ... in a world this large
  int64_t step = 0;               // roll back to this save, in DSLAUNCH_SNAPSHOT_DIR's step_<step>.<set>/
  std::string set;
  std::string store_addr;         // Reshape's: "" = the store the worker holds; else it connects to this one
  std::string store_token;
  DS_MESSAGE(WorkerReshape);
};
struct WorkerReshaped {           // worker -> agent: answer to WorkerReshape
  uint32_t generation = 0;
  uint8_t ok = 0;
  std::string why;                // when !ok
  uint32_t micros = 0;            // WorkerReshape received -> training again (the new communicator's barrier passed)
  DS_MESSAGE(WorkerReshaped);
};
struct Stop { uint32_t generation = 0; DS_MESSAGE(Stop); };
struct Stopped { uint32_t generation = 0; DS_MESSAGE(Stopped); };
// Heartbeat (wire_format.md "Agent session"). The coordinator stamps its
// Pings; an agent answers a stamped Ping at once with one that echoes the
// stamp, so the coordinator reads the round trip off its own clock. An
// agent's own Pings carry no stamp and are never answered.
struct Ping {
  uint64_t sent_micros = 0;       // the sender's clock, opaque to the peer; 0: answer not wanted
  uint64_t echo_micros = 0;       // the sent_micros of the Ping this answers; 0: not an answer
  DS_MESSAGE(Ping);
};
struct Shutdown {
  int32_t exit_code = 0;          // the agent's exit status: the job's in the per-node form (every node
                                  //   exits non-zero when the job failed), else 0
  DS_MESSAGE(Shutdown);
};
// Fencing (wire_format.md "Fencing"): with coordinator failover
// (coordinator: in the job file) every coordinator -> agent frame after the
// handshake travels inside one of these, with the fencing token of the
// leader that sent it (wire/fencing_token.h decides, on the agent's side).
struct Fenced {
  uint64_t token = 0;             // the leader key's create revision in etcd; > 0
  uint32_t type = 0;              // the frame inside: its MsgType (never Fenced)
  Bytes payload;
  DS_MESSAGE(Fenced);
};
// Coordinator failover (wire_format.md "Resume"): an agent that kept its
// workers through coordinator.grace tells the new leader, right after its
// Register, what it is running; the frames it held meanwhile follow.
struct ResumedWorker {
  int32_t rank = 0;               // in `generation`
  int32_t pid = 0;
};
struct Resume {
  uint32_t generation = 0;        // the agent's newest generation (0: none yet)
  uint8_t running = 0;            // 1: that generation's workers were started here (some may have ended since)
  uint64_t token_seen = 0;        // the newest fencing token it admitted before the loss
  std::vector<ResumedWorker> workers;  // every worker of `generation` started here, ended or not
  DS_MESSAGE(Resume);
};
// Where else a leader of the job may be found (coordinator.standbys): an
// agent that loses its coordinator tries these in turn, after the one it had.
struct Coordinators {
  std::vector<std::string> addresses;  // host:port, the sender's own first
  DS_MESSAGE(Coordinators);
};
// Attach (role kAttach): the coordinator to `dslaunch attach`.
struct Attached {
  std::string history;                 // lines (\n-separated) saying what happened before
  std::vector<std::string> coordinators;  // host:port where a leader may be found, this one first
  DS_MESSAGE(Attached);
};
struct AttachLine {
  int32_t rank = -1;                   // -1: a line of dslaunch's own (a notice)
  std::string host;                    // the rank's host, as its prefix shows it
  int32_t local_rank = -1;
  uint8_t stream = 2;                  // 1 stdout, 2 stderr
  std::string line;                    // without its newline
  DS_MESSAGE(AttachLine);
};
struct AttachStatus { std::string text; DS_MESSAGE(AttachStatus); };
struct AttachEnd {
  int32_t exit_code = 0;               // dslaunch's exit code for the job
  std::string summary;                 // the summary dslaunch printed, uncolored
  DS_MESSAGE(AttachEnd);
};
struct Joined {                   // coord -> a joining node (role join): the rank it was given
  uint32_t node_index = 0;        // its node rank: its agent registers as this node
  uint32_t max_nodes = 0;         // the job's --nnodes (MAX of MIN:MAX)
  DS_MESSAGE(Joined);
};

struct StoreSet { std::string key; Bytes value; DS_MESSAGE(StoreSet); };
struct StoreGet { std::string key; uint32_t timeout_ms = 0; DS_MESSAGE(StoreGet); };
struct StoreAdd { std::string key; int64_t delta = 0; DS_MESSAGE(StoreAdd); };
struct StoreWait { std::vector<std::string> keys; uint32_t timeout_ms = 0; DS_MESSAGE(StoreWait); };
struct StoreOk { DS_MESSAGE(StoreOk); };
struct StoreValue { Bytes value; DS_MESSAGE(StoreValue); };
struct StoreInt { int64_t value = 0; DS_MESSAGE(StoreInt); };

#undef DS_MESSAGE

}  // namespace ds::msg
