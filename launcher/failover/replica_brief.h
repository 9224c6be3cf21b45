// The job's own etcd (coordinator: {replicas: N}): what the leading run
// tells the standby it starts on each of the first N hosts, so that the
// standby runs that host's etcd member. One line of JSON on the standby's
// stdin after the job secret (SSH carries both encrypted; a local pipe
// otherwise), never a file or a command line: the member's certificate and
// key, a client certificate for its coordinator, the CA's certificate and
// where every member listens, and the job CA's key (whichever standby
// leads replaces a lost member: member_keeper.h). Pure value types and functions, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/failover/embedded_etcd.h"
#include "launcher/failover/job_ca.h"

namespace ds::failover {

struct ReplicaMember {
  std::string name;      // "m<K>"
  std::string ip;        // where it listens and what it advertises (numeric)
  int client_port = 0;
  int peer_port = 0;
};

struct ReplicaBrief {
  int index = 0;                        // this standby's K: it runs members[K]
  std::vector<ReplicaMember> members;   // every member, by index
  std::string cluster_token;            // the job id: members of another job never join
  std::string ca_pem;                   // the job CA's certificate
  std::string ca_key_pem;               // and its key: a standby that leads issues a replacement's certificates
  bool join_existing = false;           // a replacement: it joins the running members (etcd's "existing")
  IssuedCert member;                    // members[K]'s server certificate (also its peer client one)
  IssuedCert client;                    // its coordinator's client certificate
};

// One line (no newline inside); Decode's InvalidArgument says what is missing or wrong.
std::string EncodeBrief(const ReplicaBrief& b);
Result<ReplicaBrief> DecodeBrief(const std::string& line);

// "https://ip:peer" and "https://ip:client" of one member.
std::string PeerUrl(const ReplicaMember& m);
std::string ClientUrl(const ReplicaMember& m);
// "m0=https://ip:peer,..." and every member's "https://ip:client".
std::string InitialCluster(const std::vector<ReplicaMember>& members);
std::vector<std::string> ClientEndpoints(const std::vector<ReplicaMember>& members);

// members[K]'s options with its data directory and TLS files (etcd's
// timings tuned for hosts on one network: a lost raft leader is replaced
// in about a second, not etcd's default of several).
EmbeddedEtcdOptions MemberOptions(const ReplicaBrief& b, const std::string& data_dir, const TlsPaths& tls);

}  // namespace ds::failover
