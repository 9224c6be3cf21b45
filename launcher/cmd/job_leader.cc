#include "launcher/cmd/job_leader.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"

namespace ds {
namespace {

constexpr int64_t kMinLeaseTtl = 3;  // seconds (LeaderOptions)

}  // namespace

std::string JobKey(const CoordinatorSpec& spec, const std::string& job_id, const char* leaf) {
  std::string prefix = spec.prefix.empty() ? kDefaultCoordinatorPrefix : spec.prefix;
  if (prefix.back() != '/') prefix += '/';
  return fmt::format("{}{}/{}", prefix, job_id, leaf);
}

failover::LeaderSessionOptions LeaderOptions(const JobSpec& job, const std::string& job_id,
                                             const std::string& identity) {
  const CoordinatorSpec& c = job.coordinator;
  failover::LeaderSessionOptions o;
  o.client.endpoints = c.etcd;
  o.client.tls = etcd::TlsFiles{c.ca, c.cert, c.key};
  // A call waits no longer than a heartbeat timeout: a lease renewal that
  // hangs longer would outlive the lease.
  o.client.timeout_s = std::max(1.0, job.elastic.heartbeat_timeout);
  o.leader_key = JobKey(c, job_id, "leader");
  o.state_key = JobKey(c, job_id, "state");
  o.identity = identity;
  // Not under 3 s: renewed every third of it, a lease of 2 s leaves a busy
  // etcd (a loaded machine, a raft election) under 0.7 s per renewal.
  o.ttl_s = std::max<int64_t>(kMinLeaseTtl, static_cast<int64_t>(std::ceil(job.elastic.heartbeat_timeout)));
  o.give_up_s = CoordinatorGrace(c, job.elastic.heartbeat_timeout) + static_cast<double>(o.ttl_s);
  return o;
}

Result<std::unique_ptr<failover::LeaderSession>> LeadJob(const JobSpec& job, const std::string& job_id,
                                                        const std::string& identity) {
  if (job.coordinator.etcd.empty()) return std::unique_ptr<failover::LeaderSession>();
  return failover::LeaderSession::Start(LeaderOptions(job, job_id, identity));
}

Result<std::unique_ptr<failover::LeaderSession>> LeadJobWhenFree(const JobSpec& job, const std::string& job_id,
                                                                const std::string& identity, double wait_s) {
  const auto until = std::chrono::steady_clock::now() + Seconds(wait_s);
  bool said = false;
  while (true) {
    auto s = LeadJob(job, job_id, identity);
    const Status::Code code = s.status().code();
    if (s.ok() || (code != Status::Code::kAborted && code != Status::Code::kUnavailable) ||
        std::chrono::steady_clock::now() >= until)
      return s;
    if (code == Status::Code::kUnavailable && !std::exchange(said, true))
      DS_LOG(Warn, Coord) << s.status().message() << "; trying again";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polls the key: a lease runs out on etcd's clock
  }
}

Result<std::unique_ptr<failover::LeaderSession>> LeadJobAsStandby(const JobSpec& job, const std::string& job_id,
                                                                 const std::string& identity,
                                                                 const std::function<bool()>& ended) {
  bool said = false;
  for (;;) {
    auto s = LeadJob(job, job_id, identity);
    const Status::Code code = s.status().code();
    if (s.ok()) {
      const Result<JobState> st = ReadJobState(job, job_id);
      if (!st.ok() || st->phase != CoordState::kDone) return s;
      (*s)->Stop();  // the other leader finished the job and resigned: nothing left to lead
      return std::unique_ptr<failover::LeaderSession>();
    }
    if (code == Status::Code::kUnavailable) {
      // etcd slow to answer (a loaded machine, a raft election after a
      // member's loss) is no reason to give the job up.
      if (!std::exchange(said, true)) DS_LOG(Warn, Coord) << "standby: " << s.status().message() << "; trying again";
      if (ended()) return std::unique_ptr<failover::LeaderSession>();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    if (code != Status::Code::kAborted) return s;
    DS_LOG(Info, Coord) << "standby: another standby leads job " << job_id << "; waiting for it in turn";
    DS_ASSIGN_OR_RETURN(bool vacant, WaitForVacancy(job, job_id, ended));
    const Result<JobState> st = ReadJobState(job, job_id);
    if (!vacant || (st.ok() && st->phase == CoordState::kDone)) return std::unique_ptr<failover::LeaderSession>();
  }
}

JobOver::JobOver(const JobSpec& job, std::string job_id, double silence_s)
    : job_(job), job_id_(std::move(job_id)), silence_s_(silence_s), last_answer_(std::chrono::steady_clock::now()) {}

bool JobOver::operator()() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_look_ < std::chrono::seconds(1)) return false;
  last_look_ = now;
  // The first member that answers first, quorum or not: "done" is final, so
  // a member that applied it is enough. At the job's end the members go one
  // by one, and a quorum read on the last ones waits out its timeout.
  const Result<JobState> local = ReadJobState(job_, job_id_, /*serializable=*/true);
  if (local.ok() && local->phase == CoordState::kDone) return true;
  const Result<JobState> s = ReadJobState(job_, job_id_);
  if (s.ok() && s->phase == CoordState::kDone) return true;
  if (s.ok() || s.status().code() == Status::Code::kNotFound) last_answer_ = now;
  return now - last_answer_ > Seconds(silence_s_);
}

// A standby's watch unanswered this many seconds: the key is read instead.
constexpr int kQuietLook = 3;

Result<bool> WaitForVacancy(const JobSpec& job, const std::string& job_id, const std::function<bool()>& ended) {
  const failover::LeaderSessionOptions o = LeaderOptions(job, job_id, "");
  DS_ASSIGN_OR_RETURN(std::unique_ptr<etcd::Client> client, etcd::Client::Create(o.client));
  bool said = false;
  auto trouble = [&](const Status& st) {
    if (!said) DS_LOG(Warn, Coord) << "standby: " << st.message() << "; trying again";
    said = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  };
  while (!ended()) {
    Result<std::optional<etcd::KeyValue>> kv = client->Get(o.leader_key);
    if (!kv.ok()) {
      trouble(kv.status());
      continue;
    }
    if (!*kv) return true;
    // Watched: a waiting standby costs etcd little. But a watch on a member
    // cut off from the others (a partition) stays open and silent while
    // the majority deletes the key, so the key is read again every few
    // quiet seconds (the client moves on to a member that answers).
    auto watch = client->WatchKey(etcd::WatchRequest{o.leader_key, "", (*kv)->mod_revision + 1});
    if (!watch.ok()) {
      trouble(watch.status());
      continue;
    }
    int quiet_s = 0;
    while (!ended()) {
      Result<etcd::WatchResponse> r = (*watch)->Next(1.0);  // a second at most, so `ended` is looked at
      if (!r.ok() && r.status().code() != Status::Code::kTimeout) break;  // the stream broke: read the key again
      if (r.ok()) {
        for (const etcd::WatchEvent& e : r->events)
          if (e.type == etcd::WatchEvent::Type::kDelete) return true;
        continue;
      }
      if (++quiet_s % kQuietLook != 0) continue;
      Result<std::optional<etcd::KeyValue>> now = client->Get(o.leader_key);
      if (now.ok() && !*now) return true;
      if (now.ok() && (*now)->create_revision != (*kv)->create_revision) break;  // another's: watch it instead
    }
  }
  return false;
}

Result<JobState> ReadJobStateWithin(const JobSpec& job, const std::string& job_id, double wait_s) {
  const auto until = std::chrono::steady_clock::now() + Seconds(wait_s);
  for (;;) {
    Result<JobState> s = ReadJobState(job, job_id);
    const Status::Code code = s.status().code();
    if ((code != Status::Code::kUnavailable && code != Status::Code::kTimeout) ||
        std::chrono::steady_clock::now() >= until)
      return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Result<JobState> ReadJobState(const JobSpec& job, const std::string& job_id, bool serializable) {
  const failover::LeaderSessionOptions o = LeaderOptions(job, job_id, "");
  DS_ASSIGN_OR_RETURN(std::unique_ptr<etcd::Client> client, etcd::Client::Create(o.client));
  failover::StateStore store(*client, o.state_key, o.leader_key);
  DS_ASSIGN_OR_RETURN(std::optional<failover::StoredState> stored, store.Read(serializable));
  if (!stored) return Status::NotFound(fmt::format("coordinator.etcd: no state at {}: job {} never ran with this "
                                                   "coordinator: section", o.state_key, job_id));
  return DecodeJobState(stored->text, RealClock().Now(), "etcd " + o.state_key);
}

}  // namespace ds
