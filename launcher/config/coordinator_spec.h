// CoordinatorSpec: the job file's coordinator: section, which asks for a
// coordinator that outlives its host (a leader elected through etcd, standby
// coordinators, agents that keep their workers while they find the new
// leader). One of two modes:
//
//   coordinator:
//     etcd: [etcd1:2379, etcd2:2379]   # "site": an etcd the site runs (its client endpoints)
//     ca: /etc/etcd/ca.pem             #   its TLS files, and the prefix of the job's keys
//     cert: /etc/etcd/client.pem
//     key: /etc/etcd/client-key.pem
//     prefix: /dslaunch/
//   coordinator:
//     replicas: 3                      # "embedded": an etcd member and a standby coordinator
//                                      #   on each of the first 3 hosts (odd, 3 to 7)
//     grace: 15s                       # either mode: how long an agent without a coordinator
//                                      #   keeps its workers (default 3 x heartbeat_timeout)
//
// torchrun's `--rdzv-backend etcd --rdzv-endpoint HOST:PORT` sets `etcd` too
// (launcher/cmd/cli_compat.cc). Plain data, its section parser (called by
// job_spec.cc) and the checks that need the plan; pure, no I/O (TLS files are
// read where the coordinator runs). A run with `etcd` leads the job there
// (launcher/cmd/job_leader.h); `replicas` is refused by the run for now.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/status.h"

namespace YAML {
class Node;
}

namespace ds {

inline constexpr const char* kDefaultCoordinatorPrefix = "/dslaunch/";
inline constexpr double kDefaultGraceHeartbeats = 3;  // grace = this x elastic.heartbeat_timeout
inline constexpr DurationRange kCoordinatorGraceRange{0.01, 3600};  // 10ms .. 1h
inline constexpr int kMinCoordinatorReplicas = 3;  // fewer tolerate no lost member
inline constexpr int kMaxCoordinatorReplicas = 7;
// What a run with coordinator.etcd says today (the run and --dry-run).
inline constexpr const char* kEtcdNotYet =
    "the job's state is kept in that etcd; if this dslaunch ends, the workers run on for coordinator.grace and "
    "`dslaunch --resume JOB` (same command line, this host) takes the job over; no standby does it for you yet";

struct CoordinatorSpec {
  std::vector<std::string> etcd;   // mode "site": endpoints HOST:PORT (IPv6 in brackets; http:// or
                                   //   https:// in front to choose; else https when ca/cert is set)
  int replicas = 0;                // mode "embedded": members on the first N hosts; 0 = not this mode
  double grace_s = 0;              // seconds an agent that lost its coordinator keeps its workers while
                                   //   it looks for the new leader; 0 = the default (CoordinatorGrace)
  int standbys = 0;                // site etcd: a standby coordinator on each of the first N hosts
  std::string ca;                  // site etcd: the CA of its server certificates; "" = the system's
  std::string cert;                // site etcd: this client's certificate (with `key`); "" = none
  std::string key;                 // site etcd: its private key
  std::string prefix = kDefaultCoordinatorPrefix;  // site etcd: every key of dslaunch's starts with it

  // Where each was set, for messages: "train.yaml:3:17", or the command
  // line's flags ("--rdzv-backend etcd --rdzv-endpoint h:2379"); "" = not set.
  std::string at;                  // the section (or the flags)
  std::string etcd_at;
  std::string replicas_at;
  std::string standbys_at;

  // Failover was asked for (either mode).
  bool on() const { return !etcd.empty() || replicas > 0; }
};

// Reads the section `key: value` of a job file at `path` into `out`. Returns
// every problem, each InvalidArgument "path:line:col: 'coordinator.KEY': ..."
// (unknown keys in yaml_keys.h's words, with a "did you mean"); empty = OK.
std::vector<Status> ParseCoordinatorSection(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                                            CoordinatorSpec& out);

// True for what coordinator.etcd accepts: [http(s)://]HOST:PORT, port 1 to
// 65535, an IPv6 host in brackets (the etcd client's own parser).
bool IsEtcdEndpoint(std::string_view text);

// The grace in seconds: grace_s, else kDefaultGraceHeartbeats x the job's
// elastic.heartbeat_timeout.
double CoordinatorGrace(const CoordinatorSpec& spec, double heartbeat_timeout_s);

// OK when every replica, and every standby, has a host of its own among
// the job's `num_hosts` (or none is asked for); else InvalidArgument naming
// where it was set, the count and what would fit.
Status CheckReplicasFit(const CoordinatorSpec& spec, size_t num_hosts);

}  // namespace ds
