// One leader among the job's coordinators, fenced: each
// coordinator campaigns with an etcd lease of `ttl_s` (about
// heartbeat_timeout) and a transaction on the job's leader key: "if the key
// has never been created (create revision 0), put my identity there with my
// lease". The winner's token is the key's create revision: every later
// leader's is higher, so an agent that refuses tokens older than the newest
// it saw (wire/fencing_token.h) ignores a deposed leader. The key goes with
// the lease: when the leader stops renewing (dead, partitioned), etcd
// deletes it after the TTL and the others, watching it, campaign again.
//
// The leader renews (Renew, about every ttl/3) and steps down at once, and
// says why (a WARN line and reason()), when the lease is gone (expired or
// revoked), when the key is gone or another's, or when no renewal was
// answered for the lease's TTL, counted on this side from when the last
// answered keepalive was *sent*: etcd's own expiry comes no earlier, so
// when another leads, Leads() here is already false, even with no answer
// from etcd at all (a partition). Leads() is what a coordinator asks before
// each command frame. Blocking calls on the client's thread; not
// thread-safe; the clock is a seam (tests drive it).
#pragma once

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/failover/etcd_client.h"

namespace ds::failover {

struct ElectionOptions {
  std::string key;       // the job's leader key, e.g. "/dslaunch/<job>/leader"
  std::string identity;  // this coordinator (its address): the key's value while it leads
  int64_t ttl_s = 3;     // the lease's TTL; etcd raises it to its minimum (about 2 s)
};

enum class Role { kCandidate, kLeader, kSteppedDown };

struct CampaignResult {
  bool leads = false;
  int64_t token = 0;     // the leader key's create revision: this one's when it leads, the holder's otherwise (0: none)
  std::string holder;    // the leader's identity
  int64_t revision = 0;  // the store's revision when this was seen (WaitForVacancy watches from the next)
};

class LeaderElection {
 public:
  LeaderElection(etcd::Client& client, const Clock& clock, ElectionOptions options);

  // One try: a lease (a new one unless this one holds a live one) and the
  // transaction. Leads when the key was free, or already ours (a retried
  // transaction whose first try was applied). Errors: etcd's, named.
  Result<CampaignResult> Campaign();
  // Waits until the leader key seen by Campaign goes (deleted, its lease
  // expired) or is replaced: OK then; Timeout after `timeout_s`; the
  // watch's error when it broke (campaign again either way).
  Status WaitForVacancy(const CampaignResult& seen, double timeout_s);
  // The leader's renewal: the keepalive, then a look at the key. OK while
  // it leads; Aborted with the reason when it stepped down now; an etcd
  // error that left it leading (until its deadline) is returned as it is.
  Status Renew();
  // True while this one leads and its lease's deadline has not passed.
  bool Leads() const;
  // Gives up leadership: deletes the key (only if it is still this
  // leader's) and revokes the lease.
  Status Resign();

  Role role() const { return role_; }
  int64_t token() const { return token_; }
  int64_t lease_id() const { return lease_; }
  const std::string& reason() const { return reason_; }  // why it stepped down
  Clock::time_point deadline() const { return deadline_; }
  // When the last keepalive (or grant) that etcd answered was sent: etcd
  // knew this coordinator alive then. An agent silent since before it may be
  // silent because this side is cut off (JobControl::SetFencing).
  Clock::time_point confirmed() const { return confirmed_; }

 private:
  // Said as a WARN line unless `expected` (a resignation at the end).
  Status StepDown(std::string reason, bool revoke = false, bool expected = false);
  Status EnsureLease();

  etcd::Client& client_;
  const Clock& clock_;
  ElectionOptions options_;
  Role role_ = Role::kCandidate;
  int64_t lease_ = 0;
  int64_t token_ = 0;
  Clock::time_point confirmed_{};
  Clock::time_point deadline_{};  // the lease holds at least until then
  // etcd answered a request sent at `sent`: the lease holds `ttl_s` from then.
  void Heard(Clock::time_point sent, int64_t ttl_s) {
    deadline_ = sent + Seconds(static_cast<double>(ttl_s));
    confirmed_ = sent;
  }
  std::string reason_;
};

}  // namespace ds::failover
