#include "launcher/failover/leader_election.h"

#include <chrono>

#include <fmt/format.h>

#include "common/log.h"

namespace ds::failover {
namespace {

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

LeaderElection::LeaderElection(etcd::Client& client, const Clock& clock, ElectionOptions options)
    : client_(client), clock_(clock), options_(std::move(options)) {}

bool LeaderElection::Leads() const { return role_ == Role::kLeader && clock_.Now() < deadline_; }

Status LeaderElection::EnsureLease() {
  const Clock::time_point sent = clock_.Now();
  if (lease_ != 0 && sent < deadline_) {
    DS_ASSIGN_OR_RETURN(etcd::LeaseResponse alive, client_.LeaseKeepAlive(lease_));
    if (alive.ttl > 0) {
      Heard(sent, alive.ttl);
      return Status::OK();
    }
  }
  DS_ASSIGN_OR_RETURN(etcd::LeaseResponse granted, client_.LeaseGrant(options_.ttl_s));
  lease_ = granted.id;
  Heard(sent, granted.ttl);
  return Status::OK();
}

Result<CampaignResult> LeaderElection::Campaign() {
  if (role_ == Role::kLeader && Leads()) return CampaignResult{true, token_, options_.identity, 0};
  role_ = Role::kCandidate;
  DS_RETURN_IF_ERROR(EnsureLease());
  etcd::TxnRequest txn;
  txn.compare.push_back(etcd::Compare{options_.key, etcd::Compare::Target::kCreate, etcd::Compare::Op::kEqual, 0, ""});
  txn.success.push_back(etcd::PutRequest{options_.key, options_.identity, lease_});
  txn.success.push_back(etcd::RangeRequest{options_.key});
  txn.failure.push_back(etcd::RangeRequest{options_.key});
  DS_ASSIGN_OR_RETURN(etcd::TxnResponse r, client_.Txn(txn));
  const etcd::RangeResponse* range = nullptr;
  for (const etcd::TxnOpResponse& op : r.responses)
    if (op.kind == etcd::TxnOpResponse::Kind::kRange) range = &op.range;
  CampaignResult out;
  out.revision = r.header.revision;
  if (range == nullptr || range->kvs.empty()) return out;  // gone again in between: campaign again
  const etcd::KeyValue& kv = range->kvs.front();
  out.token = kv.create_revision;
  out.holder = kv.value;
  out.leads = r.succeeded || kv.lease == lease_;  // ours: a retried transaction whose first try was applied
  if (!out.leads) return out;
  role_ = Role::kLeader;
  token_ = kv.create_revision;
  reason_.clear();
  DS_LOG(Info, Coord) << options_.identity << " leads (" << options_.key << ", fencing token " << token_ << ", lease "
                      << lease_ << ")";
  return out;
}

Status LeaderElection::WaitForVacancy(const CampaignResult& seen, double timeout_s) {
  if (seen.token == 0) return Status::OK();
  DS_ASSIGN_OR_RETURN(auto watch, client_.WatchKey(etcd::WatchRequest{options_.key, "", seen.revision + 1}));
  for (;;) {
    DS_ASSIGN_OR_RETURN(etcd::WatchResponse r, watch->Next(timeout_s));
    for (const etcd::WatchEvent& e : r.events)
      if (e.type == etcd::WatchEvent::Type::kDelete || e.kv.create_revision != seen.token) return Status::OK();
  }
}

Status LeaderElection::StepDown(std::string reason, bool revoke, bool expected) {
  role_ = Role::kSteppedDown;
  reason_ = fmt::format("{} steps down as leader of {} (fencing token {}): {}", options_.identity, options_.key,
                        token_, reason);
  if (expected) DS_LOG(Debug, Coord) << reason_;
  else DS_LOG(Warn, Coord) << reason_;
  const int64_t lease = lease_;
  lease_ = 0;
  deadline_ = Clock::time_point{};
  // A lease that may still be alive (the key was taken from under it) is
  // revoked, best effort; an expired or unreachable one is not waited on.
  if (revoke && lease != 0) (void)client_.LeaseRevoke(lease);
  return Status::Aborted(reason_);
}

Status LeaderElection::Renew() {
  if (role_ != Role::kLeader) return Status::Aborted(reason_.empty() ? "not the leader" : reason_);
  const Clock::time_point sent = clock_.Now();
  if (sent >= deadline_)
    return StepDown(fmt::format("no keepalive answered within the lease's TTL ({} s): another coordinator may lead now",
                                options_.ttl_s));
  Result<etcd::LeaseResponse> alive = client_.LeaseKeepAlive(lease_);
  if (!alive.ok()) {
    if (clock_.Now() >= deadline_)
      return StepDown(fmt::format("no keepalive answered within the lease's TTL ({} s): {}", options_.ttl_s,
                                  alive.status().message()));
    return alive.status();
  }
  if (alive->ttl <= 0) return StepDown(fmt::format("lease {} expired or was revoked", lease_));
  Heard(sent, alive->ttl);
  Result<std::optional<etcd::KeyValue>> kv = client_.Get(options_.key);
  if (!kv.ok()) return kv.status();
  if (!*kv) return StepDown(fmt::format("the leader key {} is gone", options_.key), true);
  if ((*kv)->create_revision != token_)
    return StepDown(fmt::format("the leader key {} is {}'s now (token {})", options_.key, (*kv)->value,
                                (*kv)->create_revision),
                    true);
  DS_LOG(Debug, Coord) << "leader lease renewed, " << SecondsBetween(clock_.Now(), deadline_) << " s left";
  return Status::OK();
}

Status LeaderElection::Resign() {
  if (role_ != Role::kLeader) return Status::OK();
  etcd::TxnRequest txn;
  txn.compare.push_back(
      etcd::Compare{options_.key, etcd::Compare::Target::kCreate, etcd::Compare::Op::kEqual, token_, ""});
  txn.success.push_back(etcd::DeleteRequest{options_.key, ""});
  Result<etcd::TxnResponse> r = client_.Txn(txn);
  (void)StepDown("resigned", true, /*expected=*/true);
  return r.status();
}

}  // namespace ds::failover
