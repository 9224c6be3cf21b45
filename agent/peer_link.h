// Agent <-> agent shard transfers (wire_format.md "Snapshots"): the same
// frames and HMAC handshake as the coordinator's (role kPeer, key = the
// job's peer key from SnapshotSetup), one request per connection:
//
//   ShardPut{entry, crc32, manifest} + ShardData...  -> StoreOk | Error   (replicate)
//   ShardGet{step, set, shard}  -> ShardPut + ShardData... | Error       (fetch)
//
// The bytes travel in ShardData frames of at most kShardChunk bytes, sent
// from the shard's file with sendfile and received in bounded steps into a
// ShardSink (the receiver's file), and are checked against the crc32 before
// they are kept. What the other side says is hostile until it proved the
// key, and bounded after: nothing it sends is printed unescaped, and no
// buffer is sized by its announcements (a shard is refused when the
// receiver has no room for it, and otherwise costs what arrived). Blocking
// calls with a deadline; PeerServer runs its own thread, whose exceptions
// end it and are reported, never escape it. Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>

#include "agent/shard_sink.h"
#include "agent/snapshot_store.h"
#include "wire/client_conn.h"

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

// Sends the shard in `file` to the agent at `peer_addr` (host:port); a
// Cancel() of `cancel` ends it at once (the connect included).
Status SendShard(const std::string& peer_addr, const PeerIdentity& me, const ShardFile& file, Deadline deadline,
                 SocketCancel* cancel = nullptr);
// Asks the agent at `peer_addr` for shard `shard` of the save `set` of
// `step` (the answer must be that shard of that save), its bytes written to
// the sink `open` gives; returns what was received.
Result<HeldShard> FetchShard(const std::string& peer_addr, const PeerIdentity& me, int64_t step,
                             const std::string& set, uint32_t shard, const OpenSink& open, Deadline deadline);

// What a PeerServer serves from and receives into (SnapshotKeeper; a map in
// tests). Called on the server's connection threads, several at once.
class ShardService {
 public:
  virtual ~ShardService() = default;
  // The shard of the save `set` a peer asks for (ShardGet); an error goes back to it.
  virtual Result<ShardFile> Lookup(int64_t step, const std::string& set, uint32_t shard) = 0;
  // Where a shard a peer sends (ShardPut) is written; an error (no room) goes back to it.
  virtual Result<std::unique_ptr<ShardSink>> Receive(const HeldShard& held, const std::string& manifest) = 0;
  // A shard arrived whole and its sink committed.
  virtual void Received(const HeldShard& held) = 0;
  // A server thread ended on an exception (`what`): it serves no more.
  virtual void ServerFailed(const std::string& what) = 0;
};

// Accepts peer connections on `bind_addr` (port chosen by the kernel) on its
// own thread and serves each on a thread of its own, at most
// kMaxConnections at once (more wait in the listen backlog), each within
// `request_timeout`: a peer that stalls (one cut off mid-transfer, one that
// never finishes its handshake) holds only its own connection, never the
// fetches of a recovery. Connections that fail the handshake are logged
// escaped, the 1st, 2nd, 4th, 8th ... of them only, each line with the count
// so far. Its destruction shuts down the connections still served and joins
// their threads.
class PeerServer {
 public:
  // `service` outlives the server.
  static Result<std::unique_ptr<PeerServer>> Start(const std::string& bind_addr, PeerIdentity me,
                                                   ShardService* service, double request_timeout = 30.0);
  ~PeerServer();  // stops the thread
  const std::string& addr() const { return addr_; }

  static constexpr size_t kMaxConnections = 32;

 private:
  struct Conn {
    UniqueFd fd;
    std::thread thread;
    bool done = false;  // mu_
  };
  PeerServer() = default;
  void Loop();
  void Accept();
  void ServeConn(Conn* c, const std::string& peer);  // a connection's thread
  void Serve(int fd, const std::string& peer);
  void Refused(const std::string& peer, const Status& why);
  size_t Reap();      // joins the finished connections' threads; returns how many are left
  void StopConns();   // shuts down every connection's socket and joins its thread
  void Failed(const std::string& what);  // reported once; the server stops
  void Guarded(const std::function<void()>& body);  // a thread's body: an exception is Failed

  PeerIdentity me_;
  ShardService* service_ = nullptr;
  double request_timeout_ = 30.0;
  std::atomic<uint64_t> refused_{0};  // handshakes failed so far
  std::atomic<bool> failed_{false};
  UniqueFd listen_;
  UniqueFd wake_[2];   // a pipe: the destructor (or a failure) writes to stop the loop
  UniqueFd freed_[2];  // a pipe: a connection's thread writes when it ends
  std::string addr_;
  std::mutex mu_;
  std::list<Conn> conns_;  // mu_; only the loop adds and removes
  std::thread thread_;
};

}  // namespace ds
