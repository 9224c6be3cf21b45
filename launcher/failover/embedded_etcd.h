// One member of the job's own etcd (coordinator: {replicas: N}): Debian's
// etcd started as a child process in its own process group, killed with
// this process (PR_SET_PDEATHSIG, checked again after it is set), TLS with
// client certificates of the per-job CA on its client and peer URLs
// (--client-cert-auth, --peer-client-cert-auth: nobody without a
// certificate the job's CA signed reads or writes the job's state, or joins
// as a member), its data in a private directory (made 0700, owner-checked,
// never a symlink). etcd's output goes to a log file beside the data
// directory; a reader thread copies it there, keeps its last lines for
// messages and tells WaitReady when etcd says it serves clients, so nothing
// polls. Stop ends the whole group (SIGTERM, then SIGKILL after a grace).
//
// PR_SET_PDEATHSIG fires when the *thread* that forked exits: start members
// from a thread that lives as long as they should. Methods are for one
// owning thread; the reader thread is internal.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds::failover {

struct EmbeddedEtcdOptions {
  std::string program = "etcd";   // found on PATH (Debian's etcd-server)
  std::string name;               // this member's name in the cluster, e.g. "m0"
  std::string data_dir;           // private: made 0700 when missing, refused when another user's or open to others
  std::string log_file;           // etcd's output; "" = <data_dir>.log
  std::string ip = "127.0.0.1";   // where it listens and what it advertises
  int client_port = 0;            // both required (tests pick free ones)
  int peer_port = 0;
  std::string initial_cluster;    // "m0=https://ip:port,..."; "" = this member alone
  std::string cluster_token;      // --initial-cluster-token (the job id): members of another job never join
  bool join_existing = false;     // --initial-cluster-state existing (a replacement member)
  std::string ca_file, cert_file, key_file;  // the per-job CA, this member's certificate and key
  // Tuning: etcd's defaults are for a data centre; a job's members are
  // close. 0 = etcd's default.
  int heartbeat_ms = 0;
  int election_ms = 0;
};

// etcd's command line for `o` (pure; tests read it word for word).
std::vector<std::string> EtcdArgv(const EmbeddedEtcdOptions& o);
// "https://<ip>:<port>" of its client and peer URLs.
std::string ClientUrl(const EmbeddedEtcdOptions& o);
std::string PeerUrl(const EmbeddedEtcdOptions& o);

class EmbeddedEtcd {
 public:
  // Makes the data directory, opens the log and starts etcd. Errors:
  // InvalidArgument for a missing name, port or TLS file; the data
  // directory's PermissionDenied; IOError when it cannot start
  // ("etcd member m0: cannot run 'etcd': No such file or directory").
  static Result<std::unique_ptr<EmbeddedEtcd>> Start(const EmbeddedEtcdOptions& o);
  ~EmbeddedEtcd();  // Stop(5)
  EmbeddedEtcd(const EmbeddedEtcd&) = delete;
  EmbeddedEtcd& operator=(const EmbeddedEtcd&) = delete;

  // Waits until etcd says it serves clients (with a cluster: once it has
  // a quorum). Timeout, or Unavailable when etcd exited first, each with
  // etcd's last lines; Aborted as soon as `stop` says so (it is asked
  // every 100 ms: a standby's SIGTERM while its member forms).
  Status WaitReady(double timeout_s, const std::function<bool()>& stop = nullptr);
  // Ends the member's process group: SIGTERM, SIGKILL after `grace_s`;
  // reaps it. Idempotent.
  void Stop(double grace_s = 5);
  // SIGKILL to the group now and reap it (a member lost with its host).
  void Kill();

  pid_t pid() const { return pid_; }
  bool running() const;
  const EmbeddedEtcdOptions& options() const { return options_; }
  std::string client_url() const { return ClientUrl(options_); }
  // etcd's last lines of output (at most 20), for messages.
  std::string LastLines() const;

 private:
  struct Output;
  EmbeddedEtcd(EmbeddedEtcdOptions o, pid_t pid, std::unique_ptr<Output> out);
  void Reap();

  EmbeddedEtcdOptions options_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::unique_ptr<Output> out_;
};

}  // namespace ds::failover
