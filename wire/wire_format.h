// Wire format of every dslaunch connection (agent <-> coordinator, store
// client <-> coordinator): length-prefixed frames with a fixed 12-byte header.
// All integers are big-endian. See wire_format.md for the page of prose.
//
//   offset size field
//   0      4    magic    kMagic ("DSLN")
//   4      2    version  kVersion; a peer with another version is refused
//   6      2    type     MsgType
//   8      4    length   payload bytes that follow, <= kMaxPayload
//   12     len  payload  fields in the order of the message's struct (protocol.h)
//
// Payload primitives: u8, u32, i32, i64 (big-endian), str/bytes (u32 length +
// bytes), lists (u32 count + items). Constants only; no code.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ds::wire {

constexpr uint32_t kMagic = 0x44534C4E;            // "DSLN"
constexpr uint16_t kVersion = 13;  // 2: Assign and WorkerExited grew fields; 3: snapshots;
                                  // 4: the launch tree; 5: a token per child agent, and
                                  // snapshot entries carry their save's identity;
                                  // 6: Output's progress flag;
                                  // 7: Assign's pty size, role join and Joined (ranks given at join),
                                  //    Shutdown's exit code; Progress summaries;
                                  //    Assign's warm spares; snapshot counters;
                                  // 8: in-place recovery: Reshape, Reshaped, WorkerReshape(d);
                                  //    Progress's save stall;
                                  //    Ping's stamp and echo: heartbeat round trips;
                                  //    hang stacks: DumpStacks, Stacks;
                                  // 9: SnapshotPlan (the recovery point), the counters' budget wait;
                                  //    WorkerHung (elastic.hang_timeout's verdict takes stacks first)
                                  // 10: Fenced (coordinator failover's fencing token)
                                  // 11: Resume (an agent that outlived its coordinator), Coordinators
                                  // 12: role attach (`dslaunch attach`): Attached, AttachLine,
                                  //     AttachStatus, AttachEnd
                                  // 13: Reshape and WorkerReshape name the store (in place after a takeover)
constexpr size_t kHeaderSize = 12;
constexpr uint32_t kMaxPayload = 16u * 1024 * 1024;  // larger frames are rejected unread
// Before AuthOk a frame is a Hello or an Auth, nothing larger: Hello is
// 13 bytes + name + job id (a 253-byte host name leaves 246 for the job id),
// Auth is 36. A larger header closes the connection unread, so an
// unauthenticated peer never makes the server allocate more than this.
constexpr uint32_t kMaxHandshakePayload = 512;
// What a client reads before the server proved the key (its AuthOk): a
// Challenge or an AuthOk (36 bytes) or an Error, whose message is a few
// hundred bytes at most (Printable may quadruple a peer-supplied part).
constexpr uint32_t kMaxHandshakeReply = 4096;
constexpr size_t kNonceSize = 32;                    // challenge bytes
constexpr size_t kMacSize = 32;                      // HMAC-SHA256

// The role a client announces in Hello.
// kJoin: a per-node dslaunch without a node rank asking the coordinator for
// one (wire_format.md "Join"); it is answered with Joined or Error, then closed.
// kAttach: `dslaunch attach` following the job's output (wire_format.md "Attach").
enum class Role : uint8_t { kAgent = 1, kStore = 2, kPeer = 3, kJoin = 4, kAttach = 5 };
// An attach client's Hello names the node whose attach key it proves, or this:
// the key of the leader's own attach file (on the coordinator's host).
constexpr uint32_t kAttachLeaderNode = 0xFFFFFFFF;

enum class MsgType : uint16_t {
  // Handshake (both roles).
  kHello = 1,       // client -> server: role, name, job id, node index
  kChallenge = 2,   // server -> client: nonce
  kAuth = 3,        // client -> server: HMAC(key, nonce)
  kAuthOk = 4,      // server -> client: HMAC(key, "server" + nonce) (mutual auth)
  kError = 5,       // either way: code + message, then the sender closes
  // Agent <-> coordinator.
  kRegister = 10,       // agent: node facts
  kReserve = 11,        // coord -> node 0: bind-and-hold MASTER_PORT for a generation
  kReserved = 12,       // node 0 -> coord: the held port (or an error)
  kAssign = 13,         // coord -> agent: the workers of one generation
  kWorkerStarted = 14,  // agent: rank, pid
  kOutput = 15,         // agent: one line of a worker's stdout/stderr
  kWorkerExited = 16,   // agent: rank, pid, exit code or signal
  kStop = 17,           // coord -> agent: stop every worker of a generation
  kStopped = 18,        // agent: every worker of that generation is dead
  kPing = 19,           // either way, every heartbeat interval
  kShutdown = 20,       // coord -> agent: exit (after stopping workers)
  // Snapshots (wire_format.md "Snapshots").
  kSnapshotSetup = 21,  // coord -> agent: checkpoint dir, keep, peer key
  kSnapshotReady = 22,  // agent: its shard server's address (or an error)
  kSnapshotHeld = 23,   // agent: shards it holds now / no longer
  kFetch = 24,          // coord -> agent: gather every shard of a step
  kFetched = 25,        // agent: done (or why not)
  kReplicate = 26,      // coord -> agent: the nodes new shards are copied to
  kSnapshotPlan = 47,   // coord -> agent: what it must keep, and the one save it secures now
  // The launch tree (--fanout-tree; wire_format.md "Launch tree").
  kStartAgents = 27,    // coord -> agent: start these nodes' agents (their commands)
  kAgentEnded = 28,     // agent: the command starting one of them ended (status, why)
  // Join (role kJoin; wire_format.md "Join").
  kJoined = 29,         // coord -> joining node: its node rank, then the coordinator closes
  // Progress (wire_format.md "Progress summaries"); 30-36 are the store's.
  kProgress = 37,       // agent: per-rank step summaries, with its Ping
  // In-place recovery (wire_format.md "In-place recovery").
  kReshape = 38,        // coord -> agent: survivors go on in a new generation, no restart
  kReshaped = 39,       // agent: every worker of the node answered (or why not)
  kWorkerReshape = 43,  // agent -> worker, over DSLAUNCH_CONTROL_FD
  kWorkerReshaped = 44, // worker -> agent
  // Hangs: every worker's stacks before anything is killed.
  kDumpStacks = 45,     // coord -> agent: dump the generation's workers' stacks
  kStacks = 46,         // agent: its workers' stacks (bounded), answer to DumpStacks
  kWorkerHung = 48,     // agent: a worker made no step for elastic.hang_timeout (stacks before the stop)
  // Coordinator failover (wire_format.md "Fencing").
  kFenced = 49,         // coord -> agent: one frame with the leader's fencing token
  kResume = 50,         // agent: after Register to a new leader, the generation it kept running
  kCoordinators = 51,   // coord -> agent: the standby coordinators' addresses (coordinator.standbys)
  // Attach (role kAttach; wire_format.md "Attach"), coord -> `dslaunch attach` only.
  kAttached = 52,       // what happened before, where else a leader may be
  kAttachLine = 53,     // one line of a worker's, or of dslaunch's own
  kAttachStatus = 54,   // the status line's text
  kAttachEnd = 55,      // the job ended: its exit code and summary; then the coordinator closes
  // Agent <-> agent (role kPeer).
  kShardPut = 40,       // a shard's entry, crc32 and manifest; ShardData frames follow
  kShardData = 41,      // up to kMaxPayload bytes of a shard
  kShardGet = 42,       // ask for a shard: answered by ShardPut + ShardData, or Error
  // Store client <-> coordinator (each request gets exactly one reply).
  kStoreSet = 30,
  kStoreGet = 31,
  kStoreAdd = 32,
  kStoreWait = 33,
  kStoreOk = 34,
  kStoreValue = 35,
  kStoreInt = 36,
};

// Codes carried by kError.
enum class ErrorCode : uint32_t { kProtocol = 1, kAuth = 2, kTimeout = 3, kNotFound = 4, kInvalid = 5 };

}  // namespace ds::wire
