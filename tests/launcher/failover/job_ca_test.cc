// The per-job CA: certificates OpenSSL verifies against the job's CA (and
// not against another job's), members' IPs as SANs, the right key usages;
// the TLS directory private (0700, files 0600) and refused when it is a
// symlink or open to others. Also etcd's command line, word for word, and
// the data directory's checks before anything starts.
#include "launcher/failover/job_ca.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "launcher/failover/embedded_etcd.h"
#include "tests/test_util/temp_dir.h"

namespace ds::failover {
namespace {

X509* Parse(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  REQUIRE(x != nullptr);
  return x;
}

// True when `leaf` verifies against `ca` for `purpose`, with `ip` (when given) among its SANs.
bool Verifies(const std::string& ca, const std::string& leaf, int purpose, const char* ip = nullptr) {
  X509* ca_x = Parse(ca);
  X509* leaf_x = Parse(leaf);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca_x);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf_x, nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  if (ip != nullptr) X509_VERIFY_PARAM_set1_ip_asc(X509_STORE_CTX_get0_param(ctx), ip);
  const bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  X509_free(leaf_x);
  X509_free(ca_x);
  return ok;
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("job CA: a member's certificate serves its IPs and dials its peers; a client's only dials", "[unit]") {
  auto ca = JobCa::Create("j1");
  REQUIRE(ca.ok());
  auto member = ca->IssueServer("m0", {"10.0.0.1", "fd00::1"}, {"node0"});
  REQUIRE(member.ok());
  CHECK(member->key_pem.rfind("-----BEGIN PRIVATE KEY-----", 0) == 0);
  CHECK(Verifies(ca->cert_pem(), member->cert_pem, X509_PURPOSE_SSL_SERVER, "10.0.0.1"));
  CHECK(Verifies(ca->cert_pem(), member->cert_pem, X509_PURPOSE_SSL_SERVER, "fd00::1"));
  CHECK_FALSE(Verifies(ca->cert_pem(), member->cert_pem, X509_PURPOSE_SSL_SERVER, "10.0.0.2"));
  CHECK(Verifies(ca->cert_pem(), member->cert_pem, X509_PURPOSE_SSL_CLIENT));  // peers and the gateway dial with it
  auto client = ca->IssueClient("agent-3");
  REQUIRE(client.ok());
  CHECK(Verifies(ca->cert_pem(), client->cert_pem, X509_PURPOSE_SSL_CLIENT));
  CHECK_FALSE(Verifies(ca->cert_pem(), client->cert_pem, X509_PURPOSE_SSL_SERVER));
  auto other = JobCa::Create("j2");
  REQUIRE(other.ok());
  CHECK_FALSE(Verifies(other->cert_pem(), client->cert_pem, X509_PURPOSE_SSL_CLIENT));
  CHECK(ca->IssueServer("m1", {"node1"}).status().message() ==
        "etcd member m1: 'node1' is not an IP address (expected 10.0.0.1 or fd00::1)");
}

TEST_CASE("job CA: made again from its certificate and key (a standby's brief), it issues what the job trusts",
          "[unit]") {
  auto ca = JobCa::Create("j1");
  REQUIRE(ca.ok());
  auto key = ca->key_pem();
  REQUIRE(key.ok());
  auto again = JobCa::FromPem({ca->cert_pem(), *key});
  INFO(again.status().message());
  REQUIRE(again.ok());
  auto member = again->IssueServer("m3", {"10.0.0.4"});
  REQUIRE(member.ok());
  CHECK(Verifies(ca->cert_pem(), member->cert_pem, X509_PURPOSE_SSL_SERVER, "10.0.0.4"));
  auto other = JobCa::Create("j2");
  REQUIRE(other.ok());
  auto other_key = other->key_pem();
  REQUIRE(other_key.ok());
  CHECK(JobCa::FromPem({ca->cert_pem(), *other_key}).status().message() ==
        "per-job CA: the key given is not the CA certificate's");
  CHECK(JobCa::FromPem({member->cert_pem, member->key_pem}).status().message() ==
        "per-job CA: the certificate given is not a CA's");
  CHECK(JobCa::FromPem({"junk", *key}).status().message() == "per-job CA: the CA certificate is not a PEM certificate");
  CHECK(JobCa::FromPem({ca->cert_pem(), "junk"}).status().message() == "per-job CA: the CA key is not a PEM private key");
}

TEST_CASE("job CA: the TLS directory is private, and a planted or open one is refused", "[unit]") {
  testing::TempDir tmp;
  auto ca = JobCa::Create("j1");
  auto cert = ca->IssueClient("c");
  REQUIRE(cert.ok());
  auto paths = WriteTlsDir(tmp / "tls", ca->cert_pem(), *cert, "client");
  REQUIRE(paths.ok());
  CHECK(ModeOf(paths->dir) == 0700);
  for (const std::string& f : {paths->ca_file, paths->cert_file, paths->key_file}) CHECK(ModeOf(f) == 0600);
  CHECK(paths->key_file == tmp / "tls/client.key");

  REQUIRE(::mkdir((tmp / "open").c_str(), 0755) == 0);
  ::chmod((tmp / "open").c_str(), 0755);
  CHECK(WriteTlsDir(tmp / "open", ca->cert_pem(), *cert, "client").status().message() ==
        "etcd TLS directory " + tmp / "open" + " mode 755 lets others in; expected 0700");
  REQUIRE(::symlink((tmp / "tls").c_str(), (tmp / "link").c_str()) == 0);
  auto link = WriteTlsDir(tmp / "link", ca->cert_pem(), *cert, "client");
  CHECK(link.status().code() == Status::Code::kPermissionDenied);
  CHECK(link.status().message().find("is a symlink") != std::string::npos);
}

TEST_CASE("etcd's command line: TLS and client certificates on client and peer URLs", "[unit]") {
  EmbeddedEtcdOptions o;
  o.name = "m0";
  o.data_dir = "/d/m0";
  o.ip = "10.0.0.1";
  o.client_port = 2379;
  o.peer_port = 2380;
  o.cluster_token = "job-7";
  o.ca_file = "/t/ca.crt", o.cert_file = "/t/m.crt", o.key_file = "/t/m.key";
  o.heartbeat_ms = 50;
  const std::vector<std::string> want = {
      "etcd", "--name", "m0", "--data-dir", "/d/m0",
      "--listen-client-urls", "https://10.0.0.1:2379", "--advertise-client-urls", "https://10.0.0.1:2379",
      "--listen-peer-urls", "https://10.0.0.1:2380", "--initial-advertise-peer-urls", "https://10.0.0.1:2380",
      "--initial-cluster", "m0=https://10.0.0.1:2380", "--initial-cluster-state", "new",
      "--client-cert-auth", "--trusted-ca-file", "/t/ca.crt", "--cert-file", "/t/m.crt", "--key-file", "/t/m.key",
      "--peer-client-cert-auth", "--peer-trusted-ca-file", "/t/ca.crt", "--peer-cert-file", "/t/m.crt",
      "--peer-key-file", "/t/m.key", "--experimental-peer-skip-client-san-verification",
      "--logger", "zap", "--log-outputs", "stderr", "--pre-vote",
      "--initial-cluster-token", "job-7", "--heartbeat-interval", "50"};
  CHECK(EtcdArgv(o) == want);
  o.ip = "fd00::1";
  CHECK(ClientUrl(o) == "https://[fd00::1]:2379");
}

TEST_CASE("embedded etcd: bad options and an open data directory are refused before anything starts", "[unit]") {
  testing::TempDir tmp;
  EmbeddedEtcdOptions o;
  CHECK(EmbeddedEtcd::Start(o).status().message() == "etcd member: no name given");
  o.name = "m0";
  o.data_dir = tmp / "data";
  CHECK(EmbeddedEtcd::Start(o).status().message() == "etcd member 'm0': ports 0 and 0: expected 1-65535");
  o.client_port = 1, o.peer_port = 2;
  CHECK(EmbeddedEtcd::Start(o).status().message() == "etcd member 'm0': TLS needs the CA, its certificate and its key");
  o.ca_file = o.cert_file = o.key_file = "/x";
  REQUIRE(::mkdir(o.data_dir.c_str(), 0755) == 0);
  ::chmod(o.data_dir.c_str(), 0755);
  CHECK(EmbeddedEtcd::Start(o).status().message() ==
        "etcd data directory " + o.data_dir + " mode 755 lets others in; expected 0700");
}

}  // namespace
}  // namespace ds::failover
