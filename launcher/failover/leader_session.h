// The coordinator's side of failover while it runs: one thread that owns
// the etcd client, holds the job's leadership (LeaderElection: renewed
// every ttl/3) and writes the job's state (StateStore) under its fencing
// token. The io thread only offers the newest state text (Offer: never
// blocks on etcd; a text not yet written is replaced by a newer one, so a
// burst of transitions costs one write). A leader that steps down (its
// lease lost, the key another's, no keepalive answered within the TTL:
// leader_election.h) writes nothing more under the old token; it campaigns
// again and, leading again, writes the newest state under the new token,
// unless another coordinator led the job meanwhile: one holds the key under
// a higher token, or wrote the state since this one last wrote or read it.
// Then this one is deposed for good: what it knows is older than the job's
// state, so it campaigns no more, writes nothing, and says so (OnDeposed).
// Thread-safe: every method from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
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
  // Not leading for this long (etcd unreachable since the lease was lost):
  // deposed, as no agent waits for it any more (coordinator.grace); 0: never.
  double give_up_s = 0;
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

  // `cb(why)`, once, from the session's thread, when it is deposed (at
  // once, from the caller's, when it was deposed already); `why` names the
  // one that leads now when known, e.g. "10.0.0.2:4000 leads it now
  // (fencing token 57)".
  void OnDeposed(std::function<void(const std::string&)> cb);

  // Leads, and its lease's deadline has not passed (it steps down at the
  // next renewal, but commands nothing from the deadline on).
  bool Leads() const;
  // When etcd last heard this coordinator (leader_election.h confirmed()).
  Clock::time_point ConfirmedAt() const { return Clock::time_point(Clock::duration(confirmed_.load())); }
  bool Deposed() const { return deposed_.load(); }
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
  // Did another coordinator lead since this one last wrote or read the
  // state? Deposes it when so (resigning the lead it just won); false when
  // it may lead on. With etcd's answer missing it resigns too and tries again.
  bool LedMeanwhile(std::unique_lock<std::mutex>& lock);
  void Depose(std::unique_lock<std::mutex>& lock, const std::string& why);
  void Publish();  // the election's deadline and confirmation, for Leads() and ConfirmedAt()

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
  int64_t known_revision_ = 0;  // the state's newest revision this session wrote or read at Start
  std::function<void(const std::string&)> on_deposed_;
  bool stopping_ = false;
  std::string last_error_;
  std::atomic<bool> leads_{false};
  std::atomic<bool> deposed_{false};
  Clock::time_point lost_at_{};  // when it last stopped leading
  Clock::time_point learn_at_{};  // the next LearnEndpoints (Loop)
  std::atomic<Clock::duration::rep> deadline_{0};   // election_.deadline(), for other threads
  std::atomic<Clock::duration::rep> confirmed_{0};  // election_.confirmed()
  std::atomic<int64_t> token_{0};
  std::atomic<int64_t> revision_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> elections_{0};
};

}  // namespace ds::failover
