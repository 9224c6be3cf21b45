// coordinator: {replicas: N}: whoever leads the job (dslaunch, or a standby
// that took it over: its brief carries the job CA's key) keeps its etcd at
// N members. Each second it asks every member alone for the job's state (a
// serializable read: a member answers it without a quorum). One silent for
// `lost_after_s` is lost; one that never started (etcd lists it without
// client URLs) gets `form_timeout_s`, it may still be starting. The keeper
// removes a lost member from the cluster (etcd's member/remove, which needs
// the quorum the others still make) and adds a new one on the first host of
// the job that runs none and has not lost or failed to run one (member/add,
// then a standby started there through the job's launcher with a brief that
// says "join the existing members"). The new member's standby waits as any
// other, so the job survives a second loss among the members' hosts where,
// without it, two lost of three would leave no quorum and the job would end.
//
// One change at a time, and only with a host to put the new member on: a
// lost member kept in the list costs the same quorum as one removed, and
// comes back by itself should its host return (a partition). A replacement
// that does not start, or does not serve within `form_timeout_s`, is
// removed again and its host not tried again; an add etcd refuses for now
// ("unhealthy cluster") is tried again at the next look. Why the leader and
// not etcd: etcd never replaces members by itself, and only the job knows
// its hosts.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "launcher/config/job_spec.h"
#include "launcher/config/plan.h"
#include "launcher/failover/etcd_client.h"
#include "launcher/failover/job_ca.h"
#include "launcher/spawn/spawner.h"

namespace ds {

struct MemberKeeperOptions {
  JobSpec job;                    // its coordinator: the members, this leader's client certificate
  std::string job_id;
  const failover::JobCa* ca = nullptr;  // issues the new member's certificates
  std::vector<NodePlan> hosts;    // where members may run, in the order tried
  int replicas = 3;               // the members the job's etcd keeps
  double lost_after_s = 5;        // a member unanswered this long is lost
  double form_timeout_s = 60;     // a new member serves within this, or it is removed again
  // Starts standby `index` on `host` with `brief` (standby.h StartStandbyOn).
  std::function<Result<std::unique_ptr<AgentHandle>>(const NodePlan& host, int index, const std::string& brief)> start;
  std::function<void(const std::string&)> notice;  // one line each (called on the keeper's thread)
};

class MemberKeeper {
 public:
  static std::unique_ptr<MemberKeeper> Start(MemberKeeperOptions o);
  // Stops it and then waits (10 s at most) for the standbys it started:
  // they see the job's end in etcd and go with their members' files.
  ~MemberKeeper();
  // No change from now on (the job ends); returns at once.
  void RequestStop();

 private:
  explicit MemberKeeper(MemberKeeperOptions o) : o_(std::move(o)) {}
  void Loop();
  bool Connect(const std::vector<std::string>& endpoints);  // client_ at these
  bool Answers(const std::string& client_url);  // that member alone serves a read
  // One look at the members; the first one lost is replaced.
  void Look();
  // The first host of the job with no member that has not lost or failed one; hosts.size() when none.
  size_t FreeHost(const std::vector<etcd::Member>& members) const;
  // Removes `lost` when a host is free for its replacement: true when it went.
  bool RemoveLost(const etcd::Member& lost, const std::vector<etcd::Member>& members);
  // Fewer than `replicas` members: one more on a free host (member/add, its standby, until it serves).
  void Grow(const std::vector<etcd::Member>& members);
  int NextIndex(const std::vector<etcd::Member>& members);
  bool Stopping() const { return stop_.load(); }

  MemberKeeperOptions o_;
  std::unique_ptr<etcd::Client> client_;  // every member's endpoint, refreshed from the member list
  std::vector<std::string> endpoints_;
  std::map<std::string, std::unique_ptr<etcd::Client>> probes_;  // by client URL: one member alone
  std::map<uint64_t, std::chrono::steady_clock::time_point> silent_since_;
  std::set<size_t> spent_hosts_;          // indexes into hosts: lost a member, or failed to run one
  std::set<uint64_t> said_;               // lost members whose trouble was said (once each)
  bool said_add_ = false;
  std::string replacing_;                 // the removed member a new one replaces, for the line
  std::chrono::steady_clock::time_point lost_at_;
  int next_index_ = 0;
  std::vector<std::unique_ptr<AgentHandle>> standbys_;
  std::vector<std::string> host_ips_;     // hosts' addresses ("" when unresolved)
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace ds
