// coordinator: {replicas: N}: the job's own etcd. The leading run makes the
// job's CA (job_ca.h), picks where each of the N members listens (the
// first N hosts, a port pair each), and starts a standby coordinator on
// each of those hosts through the job's launcher (standby.h) with the
// member's brief on its stdin after the secret (replica_brief.h). Each
// standby runs its member (EmbeddedEtcd, a child that dies with it: its
// data and TLS files in this user's private directory there, removed when
// it ends) and then waits as any standby does. Once the members form a
// cluster, the run and every standby treat the job as one with a site's
// etcd at the members' addresses, with the job CA's client certificates:
// the fencing, the state, the takeover and attach are the same code.
//
// Why standbys and not agents run the members: the standby is already a
// process of the job on that host that outlives the launcher and gets the
// job secret over the launcher's authenticated channel, so the member's
// lifetime is the standby's and the agent protocol does not change.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/config/plan.h"
#include "launcher/failover/embedded_etcd.h"
#include "launcher/failover/job_ca.h"
#include "launcher/failover/replica_brief.h"
#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

// What the leading run holds while the job runs: the standbys (their
// members die with them) and its own client certificate's directory
// (removed with this).
struct ReplicaCluster {
  std::vector<std::unique_ptr<AgentHandle>> standbys;
  std::string tls_dir;
  std::optional<failover::JobCa> ca;  // for the replacements of lost members (member_keeper.h)
  ~ReplicaCluster();
};

// The leading run's part: starts the N standbys with their briefs, waits
// until the members serve (kFormTimeout at most), and turns
// `plan.job.coordinator` into a site spec at the members (standbys: N).
// Errors name the hosts and the last thing etcd said.
Result<std::unique_ptr<ReplicaCluster>> StartReplicas(LaunchPlan& plan, const std::string& launcher,
                                                      const SshOptions& ssh, const CliOptions& cli,
                                                      const std::string& job_id, const std::string& secret);

// What a standby holds while it lives: its member (stopped with this) and
// the member's directories (removed with this). When its own member has the
// job's end, it first waits (3 s at most) until every other member has it
// too: one that lagged would never learn it once the others are gone (no
// quorum, no raft leader), and its standby would wait for it in vain.
struct ReplicaMemberRun {
  std::unique_ptr<failover::EmbeddedEtcd> etcd;
  std::string data_dir;
  std::string tls_dir;
  JobSpec job;         // its coordinator: the members, this standby's client certificate
  std::string job_id;
  std::optional<failover::JobCa> ca;  // from its brief: should it lead, it replaces lost members
  ~ReplicaMemberRun();
  // Ends the member now and removes its files, without waiting for the
  // others: a deposed standby's, which leaves the job to the new leader.
  void Abandon();

 private:
  void LetTheOthersSeeTheEnd() const;
};

// `host`'s first address, numeric: where its member listens and what its
// certificate names. InvalidArgument naming the host.
Result<std::string> MemberAddressOf(const std::string& host);
// Member "m<index>" at `ip` on two random ports (high, above the usual
// ephemeral and service ranges: the ports are known before it starts).
failover::ReplicaMember NewMember(int index, const std::string& ip);
// The brief of members[index]: its server certificate for its IP, a client
// certificate for its standby, the CA's certificate and key.
Result<std::string> MemberBrief(const failover::JobCa& ca, const std::vector<failover::ReplicaMember>& members,
                                int index, const std::string& job_id, bool join_existing);

// A standby's part: runs the member `brief_line` names, waits until the
// cluster serves, turns `job.coordinator` into the same site spec (its own
// client certificate), and waits until the leader wrote the job's state.
Result<std::unique_ptr<ReplicaMemberRun>> RunReplicaMember(JobSpec& job, const std::string& job_id,
                                                           const std::string& brief_line);

}  // namespace ds
