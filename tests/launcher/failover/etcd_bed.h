// The tests' etcd: N members of a job's embedded etcd on loopback (free
// ports picked by the kernel, a private temporary directory, the per-job CA
// and TLS on every URL), stopped and their directory removed when the bed
// goes, and killed with the test process should it die (the members'
// parent-death signal). EtcdProgram() says whether Debian's etcd is
// installed: the tests' main (etcd_main.cc) exits 77 without it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/failover/embedded_etcd.h"
#include "launcher/failover/etcd_client.h"
#include "launcher/failover/job_ca.h"
#include "tests/test_util/temp_dir.h"

namespace ds::testing {

// The etcd on PATH, "" when there is none.
std::string EtcdProgram();
// A loopback port nobody listens on now (the kernel's pick, released).
int UnusedPort();

class EtcdBed {
 public:
  // Starts `members` members as one cluster and waits until they serve.
  static std::unique_ptr<EtcdBed> Start(int members);
  ~EtcdBed();

  // A client of the job (its CA, a client certificate of the job's CA), every member's endpoint.
  etcd::ClientOptions ClientOptions(double timeout_s = 3) const;
  std::unique_ptr<etcd::Client> Client(double timeout_s = 3) const;

  failover::EmbeddedEtcd& member(size_t i) { return *members_[i]; }
  size_t size() const { return members_.size(); }
  const failover::JobCa& ca() const { return ca_; }
  const failover::TlsPaths& client_tls() const { return client_tls_; }
  const TempDir& dir() const { return dir_; }
  std::vector<std::string> endpoints() const;

 private:
  explicit EtcdBed(failover::JobCa ca) : ca_(std::move(ca)) {}
  TempDir dir_{"dslaunch-etcd"};
  failover::JobCa ca_;
  failover::TlsPaths client_tls_;
  std::vector<std::unique_ptr<failover::EmbeddedEtcd>> members_;
};

}  // namespace ds::testing
