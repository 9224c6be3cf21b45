#include "launcher/cmd/job_leader.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ds {

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
  o.ttl_s = std::max<int64_t>(2, static_cast<int64_t>(std::ceil(job.elastic.heartbeat_timeout)));
  return o;
}

Result<std::unique_ptr<failover::LeaderSession>> LeadJob(const JobSpec& job, const std::string& job_id,
                                                        const std::string& identity) {
  // coordinator.replicas is refused with the plan (plan_from_cli.cc) for now.
  if (job.coordinator.etcd.empty()) return std::unique_ptr<failover::LeaderSession>();
  return failover::LeaderSession::Start(LeaderOptions(job, job_id, identity));
}

}  // namespace ds
