#include "launcher/cmd/job_replicas.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/private_dir.h"
#include "launcher/cmd/job_leader.h"
#include "launcher/cmd/standby.h"
#include "launcher/failover/etcd_client.h"
#include "launcher/failover/job_ca.h"
#include "launcher/failover/replica_brief.h"
#include "wire/hmac_auth.h"

namespace ds {
namespace {

using Steady = std::chrono::steady_clock;

constexpr double kFormTimeout = 60;  // ssh, etcd's start, the first election
constexpr auto kRetry = std::chrono::milliseconds(200);
constexpr auto kStandbysEnd = std::chrono::seconds(10);  // a standby sees the end within a second or two
constexpr auto kEndSeen = std::chrono::seconds(3);       // a member waits this long for the others to have the end
constexpr int kFirstPort = 20000, kPorts = 40000;

// A port above the usual ephemeral and service ranges' busy ends, at random:
// the members' ports must be known before any of them starts.
int RandomPort() {
  const Bytes b = RandomBytes(2);
  return kFirstPort + ((b[0] << 8) | b[1]) % kPorts;
}

}  // namespace

Result<std::string> MemberAddressOf(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0)
    return Status::InvalidArgument(fmt::format("coordinator.replicas: host '{}': {}", host, ::gai_strerror(rc)));
  char ip[NI_MAXHOST] = {};
  const int rc = ::getnameinfo(found->ai_addr, found->ai_addrlen, ip, sizeof(ip), nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(found);
  if (rc != 0) return Status::InvalidArgument(fmt::format("coordinator.replicas: host '{}': {}", host, ::gai_strerror(rc)));
  return std::string(ip);
}

failover::ReplicaMember NewMember(int index, const std::string& ip) {
  return {fmt::format("m{}", index), ip, RandomPort(), RandomPort()};
}

namespace {

// The site spec at the members, with `tls` as this process's client certificate.
void PointAtMembers(CoordinatorSpec& c, const std::vector<failover::ReplicaMember>& members,
                    const failover::TlsPaths& tls) {
  c.etcd = failover::ClientEndpoints(members);
  c.ca = tls.ca_file;
  c.cert = tls.cert_file;
  c.key = tls.key_file;
  c.standbys = static_cast<int>(members.size());
}

// Until the members answer a read (a quorum formed), or the deadline: the last error.
Status WaitForQuorum(const JobSpec& job, const std::string& job_id) {
  failover::LeaderSessionOptions o = LeaderOptions(job, job_id, "");
  o.client.timeout_s = 2;
  DS_ASSIGN_OR_RETURN(std::unique_ptr<etcd::Client> client, etcd::Client::Create(o.client));
  const auto until = Steady::now() + Seconds(kFormTimeout);
  Status last;
  while (Steady::now() < until) {
    if ((last = client->Get(o.state_key).status()).ok()) return last;
    std::this_thread::sleep_for(kRetry);
  }
  return Status::Unavailable(fmt::format("coordinator.replicas: the job's etcd ({}) did not answer within {} s: {}",
                                         fmt::join(job.coordinator.etcd, ", "), kFormTimeout, last.message()));
}

Status EndedWhileItFormed(const std::string& member) {
  return Status::Aborted(fmt::format("coordinator.replicas: member {}: ended by a signal while it formed", member));
}

}  // namespace

ReplicaCluster::~ReplicaCluster() {
  WaitForStandbysToEnd(standbys, kStandbysEnd);
  std::error_code ec;
  if (!tls_dir.empty()) std::filesystem::remove_all(tls_dir, ec);
}

Result<std::string> MemberBrief(const failover::JobCa& ca, const std::vector<failover::ReplicaMember>& members,
                                int index, const std::string& job_id, bool join_existing) {
  const failover::ReplicaMember& m = members[static_cast<size_t>(index)];
  DS_ASSIGN_OR_RETURN(failover::IssuedCert server, ca.IssueServer(m.name, {m.ip}));
  DS_ASSIGN_OR_RETURN(failover::IssuedCert client, ca.IssueClient("standby-" + m.name));
  DS_ASSIGN_OR_RETURN(std::string ca_key, ca.key_pem());
  return failover::EncodeBrief({index, members, job_id, ca.cert_pem(), ca_key, join_existing, server, client});
}

Result<std::unique_ptr<ReplicaCluster>> StartReplicas(LaunchPlan& plan, const std::string& launcher,
                                                      const SshOptions& ssh, const CliOptions& cli,
                                                      const std::string& job_id, const std::string& secret) {
  const int n = plan.job.coordinator.replicas;
  if (launcher != "local" && launcher != "ssh")
    return Status::InvalidArgument(fmt::format("{}: coordinator.replicas: the {} launcher starts no standbys yet "
                                               "(local and ssh do); name a site's etcd with coordinator.etcd",
                                               plan.job.coordinator.replicas_at, launcher));
  auto cluster = std::make_unique<ReplicaCluster>();
  DS_ASSIGN_OR_RETURN(cluster->ca, failover::JobCa::Create(job_id));
  const failover::JobCa& ca = *cluster->ca;
  const std::vector<NodePlan> hosts = Candidates(plan);
  std::vector<failover::ReplicaMember> members;
  for (int k = 0; k < n; ++k) {
    DS_ASSIGN_OR_RETURN(std::string ip, MemberAddressOf(hosts[static_cast<size_t>(k)].host.name));
    members.push_back(NewMember(k, ip));
  }
  std::vector<std::string> briefs;
  for (int k = 0; k < n; ++k) {
    DS_ASSIGN_OR_RETURN(std::string brief, MemberBrief(ca, members, k, job_id, /*join_existing=*/false));
    briefs.push_back(std::move(brief));
  }
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  cluster->tls_dir = dir.path + "/" + job_id + ".etcd-tls.leader";
  DS_ASSIGN_OR_RETURN(failover::IssuedCert mine, ca.IssueClient("leader"));
  DS_ASSIGN_OR_RETURN(failover::TlsPaths tls, failover::WriteTlsDir(cluster->tls_dir, ca.cert_pem(), mine, "client"));
  PointAtMembers(plan.job.coordinator, members, tls);

  std::vector<std::string> failed;
  cluster->standbys = StartStandbys({launcher, plan, ssh, cli, job_id, secret, &briefs},
                                    [&failed](const std::string& line) { failed.push_back(line); });
  if (static_cast<int>(cluster->standbys.size()) <= n / 2)
    return Status::Unavailable(fmt::format("coordinator.replicas: {} of {} members started, not a majority: {}",
                                           cluster->standbys.size(), n, fmt::join(failed, "; ")));
  DS_RETURN_IF_ERROR(WaitForQuorum(plan.job, job_id));
  return cluster;
}

void ReplicaMemberRun::LetTheOthersSeeTheEnd() const {
  auto done_at = [&](const std::vector<std::string>& endpoints) {
    JobSpec one = job;
    one.coordinator.etcd = endpoints;
    one.elastic.heartbeat_timeout = 1;  // each call waits 1 s at most
    const Result<JobState> s = ReadJobState(one, job_id, /*serializable=*/true);
    return s.ok() && s->phase == CoordState::kDone;
  };
  if (job_id.empty() || job.coordinator.etcd.empty() || !done_at({job.coordinator.etcd.front()})) return;
  std::vector<std::string> waiting(job.coordinator.etcd.begin() + 1, job.coordinator.etcd.end());  // its own first
  const auto until = Steady::now() + kEndSeen;
  while (!waiting.empty() && Steady::now() < until && !StandbyStopAsked()) {
    std::erase_if(waiting, [&](const std::string& e) { return done_at({e}); });
    if (!waiting.empty()) std::this_thread::sleep_for(kRetry);
  }
}

ReplicaMemberRun::~ReplicaMemberRun() {
  LetTheOthersSeeTheEnd();
  Abandon();
}

void ReplicaMemberRun::Abandon() {
  if (etcd) etcd->Stop(5);
  etcd.reset();
  std::error_code ec;
  if (!data_dir.empty()) std::filesystem::remove_all(data_dir, ec);
  if (!data_dir.empty()) std::filesystem::remove(data_dir + ".log", ec);  // EmbeddedEtcd's log beside it
  if (!tls_dir.empty()) std::filesystem::remove_all(tls_dir, ec);
  data_dir.clear(), tls_dir.clear(), job_id.clear();
}

Result<std::unique_ptr<ReplicaMemberRun>> RunReplicaMember(JobSpec& job, const std::string& job_id,
                                                           const std::string& brief_line) {
  DS_ASSIGN_OR_RETURN(failover::ReplicaBrief b, failover::DecodeBrief(brief_line));
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  const std::string& name = b.members[static_cast<size_t>(b.index)].name;
  auto run = std::make_unique<ReplicaMemberRun>();
  run->data_dir = dir.path + "/" + job_id + ".etcd." + name;
  run->tls_dir = dir.path + "/" + job_id + ".etcd-tls." + name;
  DS_ASSIGN_OR_RETURN(failover::TlsPaths member, failover::WriteTlsDir(run->tls_dir, b.ca_pem, b.member, "member"));
  DS_ASSIGN_OR_RETURN(failover::TlsPaths client, failover::WriteTlsDir(run->tls_dir, b.ca_pem, b.client, "client"));
  DS_ASSIGN_OR_RETURN(run->ca, failover::JobCa::FromPem({b.ca_pem, b.ca_key_pem}));
  DS_ASSIGN_OR_RETURN(run->etcd, failover::EmbeddedEtcd::Start(failover::MemberOptions(b, run->data_dir, member)));
  // A SIGTERM while the member forms (no quorum yet) ends the wait at once: `run` goes with its
  // member and files before the launcher's grace runs out and SIGKILL leaves them.
  if (Status ready = run->etcd->WaitReady(kFormTimeout, StandbyStopAsked); !ready.ok())
    return ready.code() == Status::Code::kAborted ? EndedWhileItFormed(name) : ready;
  PointAtMembers(job.coordinator, b.members, client);
  run->job_id = job_id;
  // Its own member first: every etcd client of this standby tries the
  // endpoints in order, and when the others are cut off (a partition) the
  // own one answers at once instead of after a timeout per call.
  std::rotate(job.coordinator.etcd.begin(), job.coordinator.etcd.begin() + b.index, job.coordinator.etcd.end());
  run->job = job;
  // The leader writes the job's state once the members serve; a standby reads it to wait.
  const auto until = Steady::now() + Seconds(kFormTimeout);
  for (;;) {
    if (StandbyStopAsked()) return EndedWhileItFormed(name);  // `run` goes with its member and files
    Result<JobState> s = ReadJobState(job, job_id);
    if (s.ok()) break;
    if (s.status().code() != Status::Code::kNotFound && s.status().code() != Status::Code::kUnavailable &&
        s.status().code() != Status::Code::kTimeout)
      return s.status();
    if (Steady::now() >= until)
      return Status::Unavailable(fmt::format("coordinator.replicas: member {}: the leader wrote no state within {} s: {}",
                                             name, kFormTimeout, s.status().message()));
    std::this_thread::sleep_for(kRetry);
  }
  return run;
}

}  // namespace ds
