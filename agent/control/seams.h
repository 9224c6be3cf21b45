// The seams through which AgentControl (agent_control.h) acts on the world,
// each a small interface with a real side in the agent and a fake in tests
// and in dssim (sim/sim_agent.h):
//   CoordinatorLink     the connection to the coordinator (AgentSession: TCP + Outbox)
//   WorkerLauncher      the node's worker processes and MASTER_PORT (ProcessLauncher: fork)
//   NodeSnapshots       the snapshot keeper (RealNodeSnapshots over SnapshotKeeper)
//   LaunchTreeChildren  the agents this one starts for --fanout-tree (ChildAgents)
//   StackDumps          the workers' stacks for a hang report (StackDumper); optional
// AgentControl calls them from its own thread only and never re-entrantly
// expects an event back from inside a call: what a call causes (a worker
// exiting after SIGTERM, a child agent ending) comes back later as an event.
// Implementations are owned by whoever owns the AgentControl and must
// outlive it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/torch_error_file.h"
#include "wire/protocol.h"

namespace ds {

class CoordinatorLink {
 public:
  virtual ~CoordinatorLink() = default;
  // Queues one frame for the coordinator; never blocks. Dropped when closed.
  virtual void Send(wire::MsgType type, const Bytes& payload) = 0;
  // Closes the link at once and drops what is queued. Idempotent.
  virtual void Close() = 0;
  virtual bool open() const = 0;
  // Adrift (AgentControl, coordinator.grace): one try, bounded by a short
  // deadline of the implementation's, to reach a leader of the job at
  // `address` ("" = the coordinator it started with), authenticate and send
  // this node's Register again. True: open again.
  virtual bool Reconnect(const std::string& address) {
    (void)address;
    return false;
  }
  // Where else a leader of the job may be found (Coordinators, the sender's
  // own address first): the session names them in its attach file.
  virtual void KnownCoordinators(const std::vector<std::string>& addresses) { (void)addresses; }
};

// How one worker of an Assign started: a pid, or why it did not (a line for
// its stderr, reported as exit code 127).
struct WorkerStart {
  pid_t pid = -1;
  std::string error;  // set when pid < 0
};

// A worker that ended, as the launcher saw it (its pipes already drained).
struct WorkerExit {
  int rank = 0;
  pid_t pid = 0;
  int exit_code = 0;                // valid when signal == 0
  int signal = 0;                   // the terminating signal, 0 if it exited
  std::optional<TorchError> error;  // what its TORCHELASTIC_ERROR_FILE said, bounded for the wire
};

class WorkerLauncher {
 public:
  virtual ~WorkerLauncher() = default;
  // Holds MASTER_PORT `port` (0 = any free one) until the workers start or
  // ReleasePort: the port held, or why it cannot be.
  virtual Result<uint32_t> HoldPort(uint32_t port) = 0;
  virtual void ReleasePort() = 0;
  // Starts every worker of `m` (the previous generation's are gone by now):
  // worker i with DSLAUNCH_HEARTBEAT_TOKEN beat_tokens[i] and, when not
  // empty, DSLAUNCH_SNAPSHOT_DIR snapshot_dir. Releases the held port just
  // before the first one starts. One WorkerStart per worker, in order.
  virtual std::vector<WorkerStart> StartWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                                const std::string& snapshot_dir) = 0;
  // In-place recovery. A launcher without control channels (dssim's) keeps
  // these defaults: a Reshape then fails on that node and the coordinator
  // falls back to the full restart.
  // Starts the workers of `m` (a replacement rank of a generation reshaped
  // in place) beside the running ones, which stay; no port is held or
  // released. As StartWorkers otherwise.
  virtual std::vector<WorkerStart> AddWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                              const std::string& snapshot_dir) {
    (void)beat_tokens, (void)snapshot_dir;
    return std::vector<WorkerStart>(m.workers.size(), WorkerStart{-1, "dsagent: no in-place recovery here"});
  }
  // Every running worker takes the rank `moves` gives it (same pid, pipes,
  // control channel); one moved to -1, or not in `moves`, is SIGKILLed and
  // its end comes back as rank -1.
  virtual void Renumber(const std::vector<msg::RankMove>& moves) { (void)moves; }
  // Sends `m` to `rank`'s worker over its control channel; why not (it
  // has none, it is not running, the channel is gone).
  virtual Status SendControl(int rank, const msg::WorkerReshape& m) {
    (void)rank, (void)m;
    return Status::Unavailable("it has no control channel");
  }
  // Sends `sig` to the process group of the current generation's `rank`
  // (nothing when it already ended). Its end comes back as an event.
  virtual void SignalGroup(int rank, int sig) = 0;
  // Kills what the generation left outside the workers' groups (daemons,
  // setsid'd children), sparing the launch tree's commands: how many.
  virtual int KillLeftovers() = 0;
};

// Where the workers hand their shards, for SnapshotReady.
struct SnapshotPlace {
  std::string peer_addr;   // the shard server other agents reach
  std::string memory_dir;  // DSLAUNCH_SNAPSHOT_DIR
};

class NodeSnapshots {
 public:
  virtual ~NodeSnapshots() = default;
  // Starts keeping snapshots as SnapshotSetup `m` says; why not on failure.
  // Once on, a second call (a new leader's, after a coordinator failover)
  // keeps everything as it runs and reports all it holds.
  virtual Result<SnapshotPlace> Start(const msg::SnapshotSetup& m) = 0;
  virtual bool on() const = 0;  // Start succeeded
  // The rest only when on():
  virtual std::string memory_dir() const = 0;
  virtual void SetTargets(const msg::Replicate& m) = 0;
  virtual void SetPlan(const msg::SnapshotPlan& m) = 0;  // what to keep and secure (SnapshotKeeper::SetPlan)
  virtual void StartFetch(const msg::Fetch& m) = 0;
  // Messages for the coordinator (SnapshotHeld, Fetched, counters).
  virtual std::vector<std::pair<wire::MsgType, Bytes>> TakeOutgoing() = 0;
  // What ended one of the keeper's threads ("" while none did).
  virtual std::string failure() = 0;
  // Adopts the handoffs still pending and waits until they reach the disk.
  virtual void FinishHandoffs() = 0;
};

class LaunchTreeChildren {
 public:
  virtual ~LaunchTreeChildren() = default;
  // Starts every node's agent command; one that cannot start is returned as
  // its AgentEnded at once. The others' ends come back as events.
  virtual std::vector<msg::AgentEnded> Start(const msg::StartAgents& m) = 0;
  virtual size_t running() const = 0;
};

// One worker whose stacks are wanted.
struct StackTarget {
  int rank = 0;
  pid_t pid = 0;
};

class StackDumps {
 public:
  virtual ~StackDumps() = default;
  // Begins taking `targets`' stacks within `budget`; the answer (a
  // msg::Stacks of `generation`) comes back later as an event.
  virtual void Start(uint32_t generation, std::vector<StackTarget> targets, std::chrono::milliseconds budget) = 0;
};

// AgentControl's seams, all borrowed; `stacks` may be null (dssim, tests):
// then a DumpStacks is answered at once, every rank without a stack.
struct AgentSeams {
  CoordinatorLink& link;
  WorkerLauncher& workers;
  NodeSnapshots& snapshots;
  LaunchTreeChildren& tree;
  StackDumps* stacks = nullptr;
};

}  // namespace ds
