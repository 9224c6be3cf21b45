#include "tests/launcher/failover/etcd_bed.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

namespace ds::testing {

std::string EtcdProgram() {
  const char* path = ::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/etcd";
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

int UnusedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

std::unique_ptr<EtcdBed> EtcdBed::Start(int members) {
  auto ca = failover::JobCa::Create("test-job");
  REQUIRE(ca.ok());
  std::unique_ptr<EtcdBed> bed(new EtcdBed(std::move(ca).value()));
  auto client_cert = bed->ca_.IssueClient("coordinator");
  REQUIRE(client_cert.ok());
  auto client_tls = failover::WriteTlsDir(bed->dir_ / "client", bed->ca_.cert_pem(), *client_cert, "client");
  REQUIRE(client_tls.ok());
  bed->client_tls_ = *client_tls;
  std::vector<failover::EmbeddedEtcdOptions> opts(static_cast<size_t>(members));
  std::string cluster;
  for (int i = 0; i < members; ++i) {
    failover::EmbeddedEtcdOptions& o = opts[static_cast<size_t>(i)];
    o.program = EtcdProgram();
    o.name = fmt::format("m{}", i);
    o.data_dir = bed->dir_ / (o.name + ".data");
    o.client_port = UnusedPort();
    o.peer_port = UnusedPort();
    o.cluster_token = "test-job";
    o.heartbeat_ms = 50;  // loopback: elections in a few hundred ms, not seconds
    o.election_ms = 500;
    auto cert = bed->ca_.IssueServer(o.name, {"127.0.0.1"});
    REQUIRE(cert.ok());
    auto tls = failover::WriteTlsDir(bed->dir_ / (o.name + ".tls"), bed->ca_.cert_pem(), *cert, "member");
    REQUIRE(tls.ok());
    o.ca_file = tls->ca_file, o.cert_file = tls->cert_file, o.key_file = tls->key_file;
    cluster += (cluster.empty() ? "" : ",") + o.name + "=" + failover::PeerUrl(o);
  }
  for (failover::EmbeddedEtcdOptions& o : opts) {
    o.initial_cluster = cluster;
    auto m = failover::EmbeddedEtcd::Start(o);
    INFO(m.status().message());
    REQUIRE(m.ok());
    bed->members_.push_back(std::move(m).value());
  }
  for (auto& m : bed->members_) {
    const Status ready = m->WaitReady(30);
    INFO(ready.message());
    REQUIRE(ready.ok());
  }
  return bed;
}

EtcdBed::~EtcdBed() {
  for (auto& m : members_) m->Stop(5);
}

std::vector<std::string> EtcdBed::endpoints() const {
  std::vector<std::string> out;
  for (const auto& m : members_) out.push_back(m->client_url());
  return out;
}

etcd::ClientOptions EtcdBed::ClientOptions(double timeout_s) const {
  etcd::ClientOptions o;
  o.endpoints = endpoints();
  o.tls = etcd::TlsFiles{client_tls_.ca_file, client_tls_.cert_file, client_tls_.key_file};
  o.timeout_s = timeout_s;
  return o;
}

std::unique_ptr<etcd::Client> EtcdBed::Client(double timeout_s) const {
  auto c = etcd::Client::Create(ClientOptions(timeout_s));
  INFO(c.status().message());
  REQUIRE(c.ok());
  return std::move(c).value();
}

}  // namespace ds::testing
