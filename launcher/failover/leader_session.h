// The coordinator's side of failover while it runs: one thread that owns
// the etcd client, holds the job's leadership (LeaderElection: renewed
// every ttl/3) and writes the job's state (StateStore) under its fencing
// token. The io thread only offers the newest state text (Offer: never
// blocks on etcd; a text not yet written is replaced by a newer one, so a
// burst of transitions costs one write). A leader that steps down (its
// lease lost, the key another's, no keepalive answered within the TTL:
// leader_election.h) writes nothing more under the old token; it campaigns
// again and, leading again, writes the newest state under the new token.
// Thread-safe: every method from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/failover/etcd_client.h"
#include "launcher/failover/leader_election.h"
#include "launcher/failover/state_store.h"

namespace ds::failover {

struct LeaderSessionOptions {
  etcd::ClientOptions client;
  std::string leader_key;  // e.g. "/dslaunch/<job>/leader"
  std::string state_key;   // e.g. "/dslaunch/<job>/state"
  std::string identity;    // this coordinator (its address)
  int64_t ttl_s = 3;       // the lease's TTL (about heartbeat_timeout)
};

class LeaderSession {
 public:
  // Connects and campaigns once, on the caller's thread: the session leads
  // when this returns. Errors name the key and the endpoints: Unavailable
  // when etcd cannot be reached; Aborted when another coordinator
  // leads the job ("<key> is held by <identity> (fencing token N)").
  static Result<std::unique_ptr<LeaderSession>> Start(LeaderSessionOptions o, const Clock& clock = RealClock());
  ~LeaderSession();  // Stop()
  LeaderSession(const LeaderSession&) = delete;
  LeaderSession& operator=(const LeaderSession&) = delete;

  // The newest state to write; returns at once.
  void Offer(std::string text);
  // Waits until every text offered before this call is written: OK; else
  // Timeout (with the last error) after `timeout_s`.
  Status Flush(double timeout_s);
  // Writes what is pending (one try), resigns, ends the thread: at most
  // about the client's timeout, or the TTL while it campaigns. Idempotent.
  void Stop();

  bool Leads() const { return leads_.load(); }
  int64_t token() const { return token_.load(); }        // the fencing token while it leads (0 before)
  int64_t revision() const { return revision_.load(); }  // the last write's revision (0: none yet)
  uint64_t writes() const { return writes_.load(); }     // writes that landed
  uint64_t elections() const { return elections_.load(); }  // times it became leader (1 after Start)
  std::string last_error() const;

 private:
  LeaderSession(LeaderSessionOptions o, const Clock& clock, std::unique_ptr<etcd::Client> client);
  void Loop();
  void WritePending(std::unique_lock<std::mutex>& lock);
  void CampaignAgain(std::unique_lock<std::mutex>& lock);
  void Failed(std::unique_lock<std::mutex>& lock, const Status& st);

  LeaderSessionOptions options_;
  const Clock& clock_;
  std::unique_ptr<etcd::Client> client_;  // the thread's alone once it runs
  LeaderElection election_;
  StateStore store_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string newest_;          // the newest text offered
  uint64_t offered_ = 0;        // texts offered so far
  uint64_t written_ = 0;        // the last offered text that is written (its number)
  bool stopping_ = false;
  std::string last_error_;
  std::atomic<bool> leads_{false};
  std::atomic<int64_t> token_{0};
  std::atomic<int64_t> revision_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> elections_{0};
};

}  // namespace ds::failover
