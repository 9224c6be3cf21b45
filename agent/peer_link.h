// Agent <-> agent shard transfers (wire_format.md "Snapshots"): the same
// frames and HMAC handshake as the coordinator's (role kPeer, key = the
// job's peer key from SnapshotSetup), one request per connection:
//
//   ShardPut{entry, crc32, manifest} + ShardData...  -> StoreOk | Error   (replicate)
//   ShardGet{step, set, shard}  -> ShardPut + ShardData... | Error       (fetch)
//
// The bytes travel in ShardData frames of at most kShardChunk bytes, sent
// from the shard's file with sendfile and received straight into the
// destination buffer, and are checked against the crc32 before they are
// kept. Blocking calls with a deadline; PeerServer runs its own thread.
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "agent/snapshot_store.h"
#include "common/client_conn.h"

namespace ds {

inline constexpr size_t kShardChunk = size_t{4} << 20;

// The agent's background threads (shard transfers, disk writes) yield the
// CPU and the disk to the workers: the calling thread's nice value becomes
// 10 and its I/O class idle (both a thread's own on Linux). Best effort.
void LowerThreadPriority();

struct PeerIdentity {
  std::string job_id;
  std::string key;         // SnapshotSetup.peer_key
  uint32_t node = 0;       // this agent's node index
  std::string host;        // this agent's host name
};

// Sends the shard in `file` to the agent at `peer_addr` (host:port).
Status SendShard(const std::string& peer_addr, const PeerIdentity& me, const ShardFile& file, Deadline deadline);
// Asks the agent at `peer_addr` for shard `shard` of the save `set` of
// `step`; the answer must be that shard of that save.
Result<ShardCopy> FetchShard(const std::string& peer_addr, const PeerIdentity& me, int64_t step,
                             const std::string& set, uint32_t shard, Deadline deadline);

// Accepts peer connections on `bind_addr` (port chosen by the kernel) and
// serves them one at a time on its own thread, each within `request_timeout`.
class PeerServer {
 public:
  using Lookup = std::function<Result<ShardFile>(int64_t step, const std::string& set, uint32_t shard)>;
  using Receive = std::function<Status(const ShardCopy& copy)>;
  static Result<std::unique_ptr<PeerServer>> Start(const std::string& bind_addr, PeerIdentity me, Lookup lookup,
                                                   Receive receive, double request_timeout = 30.0);
  ~PeerServer();  // stops the thread
  const std::string& addr() const { return addr_; }

 private:
  PeerServer() = default;
  void Loop();
  void Serve(int fd);

  PeerIdentity me_;
  Lookup lookup_;
  Receive receive_;
  double request_timeout_ = 30.0;
  UniqueFd listen_;
  UniqueFd wake_[2];  // a pipe: the destructor writes to stop the loop
  std::string addr_;
  std::thread thread_;
};

}  // namespace ds
