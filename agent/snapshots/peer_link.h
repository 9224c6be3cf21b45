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
#include <vector>

#include "agent/snapshots/shard_sink.h"
#include "agent/snapshots/store.h"
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
  std::string source;      // the local address connections are made from: the one peers
                           // know this node by ("" = the kernel's choice)
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
// kMaxConnections at once, each within `request_timeout`: a peer that
// stalls (one cut off mid-transfer) holds only its own connection, never the
// fetches of a recovery. What has not proved the key is bounded (idle
// connections once held every slot and replication failed):
//   - only the job's nodes get a thread: a connection from another address
//     (AllowPeers) waits, holding only its descriptor, at most
//     kUnknownWait for its address to become a node's (a node the
//     coordinator just told us about), then is closed;
//   - a handshake has kHandshakeBudget;
//   - at most kMaxPendingPerSource connections per source address wait or
//     handshake at once; a newer one closes the oldest (a flood cannot keep
//     out the one honest connection, whose handshake takes milliseconds);
//     kMaxWaiting wait in all, the oldest closed first.
// The loop accepts whenever a connection is offered, so the listen backlog
// never fills. Connections that fail the handshake are logged escaped, the
// 1st, 2nd, 4th, 8th ... of them only, each line with the count so far. Its
// destruction shuts down the connections still served and joins their
// threads.
class PeerServer {
 public:
  // `service` outlives the server.
  static Result<std::unique_ptr<PeerServer>> Start(const std::string& bind_addr, PeerIdentity me,
                                                   ShardService* service, double request_timeout = 30.0);
  ~PeerServer();  // stops the thread
  const std::string& addr() const { return addr_; }
  // The job's nodes from now on: `peer_addrs` are their shard servers'
  // host:port (numeric hosts; ports ignored). The keeper calls it with each
  // generation's Replicate; until the first call (before the job's first
  // generation) every address is taken for a node's. Any thread.
  void AllowPeers(const std::vector<std::string>& peer_addrs);

  static constexpr size_t kMaxConnections = 32;
  static constexpr size_t kMaxPendingPerSource = 8;
  static constexpr size_t kMaxWaiting = 64;
  static constexpr double kHandshakeBudget = 1.0;  // seconds
  static constexpr double kUnknownWait = 1.0;      // seconds

 private:
  struct Conn {
    UniqueFd fd;
    std::string source;   // the peer's address, without its port
    std::thread thread;
    bool authed = false;  // mu_: the handshake passed
    bool cut = false;     // mu_: shut down to make room for a newer connection from its source
    bool done = false;    // mu_
  };
  struct Waiting {        // accepted, no thread yet
    UniqueFd fd;
    std::string source, peer;
    Deadline until;
  };
  PeerServer() = default;
  void Loop();
  void Accept();
  void Admit();       // starts the waiting connections of the job's nodes while there is room; closes the expired
  void MakeRoom(const std::string& source);  // the per-source and total caps, before one more waits or starts
  void Start(UniqueFd fd, std::string source, std::string peer);
  bool Allowed(const std::string& source);
  void ServeConn(Conn* c, const std::string& peer);  // a connection's thread
  void Serve(Conn* c, const std::string& peer);
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
  std::vector<std::string> allowed_;  // mu_: the job's nodes' addresses ...
  bool told_ = false;                 // mu_: ... once AllowPeers said them
  std::list<Waiting> waiting_;        // the loop's only, oldest first
  std::thread thread_;
};

}  // namespace ds
