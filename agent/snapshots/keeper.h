// SnapshotKeeper: what a node's agent does with checkpoint shards when
// snapshots are on (checkpoint_format.md "Snapshots"). It owns
//   - the memory store (SnapshotStore, tmpfs) the workers hand shards to,
//     watched with inotify: a handoff is adopted the moment its manifest
//     lands, which costs the worker one tmpfs write;
//   - the node's checkpoint directory (SnapshotDisk), written in the
//     background;
//   - a task thread that secures the one save the coordinator's
//     SnapshotPlan names (persists this node's shards of it and sends them
//     to the nodes of the current Replicate, within a CPU budget it waits
//     for), persists replicas, and fetches (Fetch), in order;
//   - the shard server (PeerServer) other agents send replicas to and fetch
//     from.
// Shards are held per save (step and set, wire/snapshot_handoff.h); the
// keeper prunes only what the plan lets go (never the recovery point, nor
// the save being secured: shard_index.h) and drops only this run's saves
// (SnapshotSetup.run_id), so
// what earlier runs left on the node's disk is kept, reported and offered,
// never overwritten. Every change of what the node holds becomes a
// SnapshotHeld, every Fetch a Fetched, queued for the agent's loop, which
// polls events_fd() and sends TakeOutgoing() to the coordinator. An
// exception on the server's or the task thread is caught at that thread's
// edge and kept as failure(), which the loop reads at the same wake-up and
// acts on (the agent leaves the job). The loop's calls (OnInotify,
// SetTargets, StartFetch, TakeOutgoing, failure) come from one thread; the
// rest is internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/snapshots/peer_link.h"
#include "agent/snapshots/disk.h"
#include "agent/snapshots/store.h"
#include "wire/protocol.h"
#include "wire/socket_cancel.h"

namespace ds {

// What securing saves may cost a keeper while the job trains: `share` of
// one core on average since it started, plus `burst` CPU seconds ahead of it.
struct SnapshotBudget {
  double share = 0.02;
  double burst = 0.05;
};

class SnapshotKeeper : private ShardService {
 public:
  struct Identity {
    std::string job_id;
    std::string host;
    uint32_t node = 0;
    std::string bind_addr;   // the address peers reach this agent at
  };
  // Creates the memory store (under `memory_parent`, "" = /dev/shm),
  // scans the node's directory and starts the server and the task thread.
  static Result<std::unique_ptr<SnapshotKeeper>> Start(const Identity& me, const msg::SnapshotSetup& setup,
                                                       const std::string& memory_parent = "", SnapshotBudget budget = {});
  ~SnapshotKeeper() override;  // finishes queued disk writes, stops the threads, removes the memory store

  const std::string& memory_dir() const { return store_->dir(); }
  const std::string& peer_addr() const { return server_->addr(); }
  int inotify_fd() const { return inotify_.get(); }
  int events_fd() const { return events_[0].get(); }

  // Adopts every finished handoff (call when inotify_fd() is readable).
  void OnInotify();
  // The nodes new shards are copied to from now on.
  void SetTargets(const msg::Replicate& m);
  // What the coordinator says to keep and to secure: drops an abandoned
  // timeline's saves, prunes what it lets go, and secures its `secure` save
  // when that is new.
  void SetPlan(const msg::SnapshotPlan& m);
  // Gathers every shard of the save m.id of m.step (or, for step < 0,
  // starts fresh), first dropping this run's saves that lost (newer steps,
  // and other saves of m.step: an abandoned timeline) and other runs'
  // copies in memory; answered by a Fetched in TakeOutgoing().
  void StartFetch(const msg::Fetch& m);
  // Everything held now, memory and disk, as one SnapshotHeld in
  // TakeOutgoing(): for a new leader, which knows none of it (failover).
  void ReportHeld();
  // Messages for the coordinator (drains events_fd()).
  std::vector<std::pair<wire::MsgType, Bytes>> TakeOutgoing();
  // Waits until the queued tasks are done (shutdown: the last shards reach the disk).
  void Drain();
  // What ended a thread of the keeper on an exception ("" while none did).
  std::string failure();

 private:
  SnapshotKeeper() = default;
  void Post(std::function<void()> task);
  void TaskLoop();
  void Report(std::vector<msg::ShardEntry> added, std::vector<msg::ShardEntry> removed);
  void PushOutgoing(wire::MsgType type, Bytes payload);
  void Fail(const std::string& what);           // any thread: the first failure is kept, the loop woken
  // ShardService, on the server thread: a peer fetches, a replica arrives.
  Result<ShardFile> Lookup(int64_t step, const std::string& set, uint32_t shard) override;
  Result<std::unique_ptr<ShardSink>> Receive(const HeldShard& held, const std::string& manifest) override;
  void Received(const HeldShard& held) override;
  void ServerFailed(const std::string& what) override { Fail(what); }
  msg::SnapshotPlan plan();
  // Task thread: persists and replicates this node's shards of `save`,
  // each once the CPU budget allows, unless it is no longer the one to secure.
  void Secure(const msg::SaveRef& save);
  bool WaitForBudget(const msg::SaveRef& save);  // false: superseded, or stopping
  void Persist(const msg::ShardEntry& e);        // task thread: a replica or a fetched shard to disk
  void PersistAndSend(const ShardFile& file, bool replicate);  // task thread: the work itself
  void PersistNewest();                                        // task thread, at Drain
  void Fetch(const msg::Fetch& m);              // task thread
  Result<HeldShard> LoadFromDisk(int64_t step, const std::string& set, uint32_t shard);  // task thread: the node's disk to memory
  std::vector<msg::ShardEntry> PruneAll();

  Identity me_;
  PeerIdentity peer_;
  std::string run_;                     // this run's id: the saves it prunes and drops
  int keep_ = 2;
  SnapshotBudget budget_;
  std::chrono::steady_clock::time_point started_;
  double background_cpu_ = 0;           // task thread: CPU seconds spent persisting and replicating
  std::unique_ptr<SnapshotStore> store_;
  std::unique_ptr<SnapshotDisk> disk_;  // null when the job has no checkpoint dir
  std::unique_ptr<PeerServer> server_;
  UniqueFd inotify_;
  UniqueFd events_[2];                  // pipe: a byte per batch of outgoing messages
  SocketCancel sends_cancel_;           // StartFetch cuts the replica under way short; the gather resets it

  std::mutex mu_;                       // guards everything below
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false;
  bool stopping_ = false;
  bool draining_ = false;               // Drain() began: no more replication
  int fetches_owed_ = 0;                // StartFetch calls whose Fetch has not begun: no budget waits
  std::vector<msg::ReplicaPeer> targets_;
  msg::SnapshotPlan plan_;              // the coordinator's latest (none yet: nothing is settled)
  std::vector<std::pair<wire::MsgType, Bytes>> outgoing_;
  msg::SnapshotCounters counters_;
  std::string failure_;                 // the first exception that ended a thread's work
  std::thread thread_;
};

}  // namespace ds
