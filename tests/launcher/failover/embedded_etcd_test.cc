// The job's embedded etcd, real members on loopback: TLS with the job's
// client certificates on every URL (a client without one, with another
// job's, or without TLS is refused), private data and TLS files, a 3-member
// cluster that goes on when a member is SIGKILLed (the client fails over)
// and stops serving without a quorum, and members that end with their
// owner.
#include "launcher/failover/embedded_etcd.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/launcher/failover/etcd_bed.h"
#include "tests/test_util/wait_until.h"

namespace ds::failover {
namespace {

using testing::EtcdBed;

mode_t ModeOf(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("embedded etcd: only a client with the job's certificate gets in", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto job = bed->Client();
  REQUIRE(job->Put("/secret", "state").ok());

  SECTION("without a client certificate") {
    auto o = bed->ClientOptions();
    o.tls.cert_file.clear(), o.tls.key_file.clear();
    auto c = etcd::Client::Create(o);
    REQUIRE(c.ok());
    auto r = (*c)->Get("/secret");
    INFO(r.status().message());
    CHECK(r.status().code() == Status::Code::kPermissionDenied);
    CHECK(r.status().message() == bed->endpoints()[0] +
                                      "/v3/kv/range: read: sslv3 alert bad certificate (etcd refused this client's "
                                      "certificate: expected one the job's CA signed)");
  }
  SECTION("with a certificate of another job's CA") {
    auto other = JobCa::Create("other-job");
    REQUIRE(other.ok());
    auto cert = other->IssueClient("intruder");
    REQUIRE(cert.ok());
    auto tls = WriteTlsDir(bed->dir() / "intruder", bed->ca().cert_pem(), *cert, "client");
    REQUIRE(tls.ok());
    auto o = bed->ClientOptions();
    o.tls = etcd::TlsFiles{tls->ca_file, tls->cert_file, tls->key_file};
    auto c = etcd::Client::Create(o);
    REQUIRE(c.ok());
    auto r = (*c)->Get("/secret");
    INFO(r.status().message());
    CHECK_FALSE(r.ok());  // the alert, or the connection reset when the alert lost the race with our write
    const bool refused = r.status().message().find("bad certificate") != std::string::npos ||
                         r.status().message().find("Connection reset by peer") != std::string::npos;
    CHECK(refused);
  }
  SECTION("trusting another CA: the member is not believed") {
    auto other = JobCa::Create("other-job");
    REQUIRE(other.ok());
    auto cert = bed->ca().IssueClient("coordinator");
    auto tls = WriteTlsDir(bed->dir() / "wrong-ca", other->cert_pem(), *cert, "client");
    REQUIRE(tls.ok());
    auto o = bed->ClientOptions();
    o.tls = etcd::TlsFiles{tls->ca_file, tls->cert_file, tls->key_file};
    auto r = (*etcd::Client::Create(o))->Get("/secret");
    CHECK(r.status().message().find("TLS handshake: certificate verify failed") != std::string::npos);
  }
  SECTION("without TLS") {
    std::string url = bed->endpoints()[0];
    url.replace(0, 5, "http");
    auto c = etcd::Client::Create(etcd::ClientOptions{{url}});
    REQUIRE(c.ok());
    CHECK_FALSE((*c)->Get("/secret").ok());
  }
}

// The peer port's check is the job's CA alone (the address a peer dials
// from is not asked): another job's certificate is refused there, and the
// job's own is taken from an address it does not name.
TEST_CASE("embedded etcd: its peer port takes the job's certificates only, from any address", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  const std::string peer_url = PeerUrl(bed->member(0).options());
  auto call = [&](const IssuedCert& cert, const std::string& name) {
    auto tls = WriteTlsDir(bed->dir() / name, bed->ca().cert_pem(), cert, "member");
    REQUIRE(tls.ok());
    auto c = etcd::Client::Create({{peer_url}, {tls->ca_file, tls->cert_file, tls->key_file}, 3});
    REQUIRE(c.ok());
    return (*c)->Get("/secret").status().message();
  };
  auto refused = [](const std::string& m) {
    return m.find("bad certificate") != std::string::npos || m.find("Connection reset by peer") != std::string::npos;
  };
  auto other = JobCa::Create("other-job");
  REQUIRE(other.ok());
  auto intruder = other->IssueServer("m9", {"127.0.0.1"});
  REQUIRE(intruder.ok());
  const std::string theirs = call(*intruder, "intruder");
  INFO(theirs);
  CHECK(refused(theirs));
  auto elsewhere = bed->ca().IssueServer("m9", {"127.0.0.9"});  // this connection comes from 127.0.0.1
  REQUIRE(elsewhere.ok());
  const std::string ours = call(*elsewhere, "elsewhere");
  INFO(ours);
  CHECK(ours.find(": HTTP 404") != std::string::npos);  // let in: the peer port serves no /v3 calls
}

TEST_CASE("embedded etcd: its data directory and TLS files are private", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  CHECK(ModeOf(bed->member(0).options().data_dir) == 0700);
  CHECK(ModeOf(bed->client_tls().dir) == 0700);
  CHECK(ModeOf(bed->client_tls().key_file) == 0600);
  CHECK(ModeOf(bed->client_tls().cert_file) == 0600);
  CHECK(ModeOf(bed->member(0).options().key_file) == 0600);
  CHECK(ModeOf(bed->member(0).options().data_dir + ".log") == 0600);
}

TEST_CASE("embedded etcd: 3 members go on without one, the client fails over, and stop without a quorum", "[etcd]") {
  auto bed = EtcdBed::Start(3);
  auto c = bed->Client(2);
  REQUIRE(c->Put("/state", "g1").ok());
  const std::string first = c->current_endpoint();
  CHECK(first == bed->endpoints()[0]);
  bed->member(0).Kill();
  CHECK_FALSE(bed->member(0).running());
  auto put = c->Put("/state", "g2");
  INFO(put.status().message());
  REQUIRE(put.ok());
  CHECK(c->current_endpoint() != first);
  auto other = bed->Client(2);  // a client that starts at the dead member
  auto got = other->Get("/state");
  REQUIRE(got.ok());
  CHECK((*got)->value == "g2");
  bed->member(1).Kill();
  auto lost = c->Put("/state", "g3");
  CHECK_FALSE(lost.ok());
  INFO(lost.status().message());
  CHECK(lost.status().message().rfind("no etcd endpoint answered /v3/kv/put: ", 0) == 0);
}

TEST_CASE("embedded etcd: a member that cannot start says why", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  EmbeddedEtcdOptions o = bed->member(0).options();
  o.name = "m1";
  o.data_dir = bed->dir() / "m1.data";
  o.initial_cluster.clear();
  o.peer_port = testing::UnusedPort();  // the client port is m0's: taken
  auto m = EmbeddedEtcd::Start(o);
  REQUIRE(m.ok());
  const Status st = (*m)->WaitReady(30);
  CHECK(st.code() == Status::Code::kUnavailable);
  CHECK(st.message().rfind("etcd member 'm1' (" + (*m)->client_url() + "): exited before serving clients; its last lines:", 0) == 0);
  CHECK(st.message().find("address already in use") != std::string::npos);
  o.program = "/nonexistent/etcd";
  CHECK(EmbeddedEtcd::Start(o).status().message() ==
        "etcd member 'm1': cannot run '/nonexistent/etcd': No such file or directory (install Debian's etcd-server)");
}

// Members on loopback "hosts" (run_leader's beds) dial each other from
// 127.0.0.1, not from the IP their certificate names, as a host with
// several addresses may: they form all the same (before, two such members
// never did, and a 3-member job's third member formed only when m0 led).
TEST_CASE("embedded etcd: members whose connections come from another of the host's addresses form", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  std::vector<EmbeddedEtcdOptions> opts;
  std::string cluster;
  for (const std::string ip : {"127.0.0.2", "127.0.0.3"}) {
    EmbeddedEtcdOptions o = bed->member(0).options();
    o.name = "m" + ip.substr(ip.size() - 1);
    o.ip = ip;
    o.data_dir = bed->dir() / (o.name + ".data");
    o.client_port = testing::UnusedPort();
    o.peer_port = testing::UnusedPort();
    auto cert = bed->ca().IssueServer(o.name, {ip});
    REQUIRE(cert.ok());
    auto tls = WriteTlsDir(bed->dir() / (o.name + ".tls"), bed->ca().cert_pem(), *cert, "member");
    REQUIRE(tls.ok());
    o.cert_file = tls->cert_file, o.key_file = tls->key_file;
    cluster += (cluster.empty() ? "" : ",") + o.name + "=" + PeerUrl(o);
    opts.push_back(o);
  }
  std::vector<std::unique_ptr<EmbeddedEtcd>> members;
  for (EmbeddedEtcdOptions& o : opts) {
    o.initial_cluster = cluster;
    auto m = EmbeddedEtcd::Start(o);
    REQUIRE(m.ok());
    members.push_back(std::move(m).value());
  }
  for (auto& m : members) {
    const Status ready = m->WaitReady(30);
    INFO(ready.message());
    CHECK(ready.ok());
  }
}

// What member_keeper does, by hand: etcd's own membership calls replace a
// lost member, and the cluster then goes on after a second loss, where
// without the replacement two lost of three leave no quorum.
TEST_CASE("embedded etcd: a lost member is removed, a new one joins the others, a client learns it, and a second "
          "loss is survived",
          "[etcd]") {
  auto bed = EtcdBed::Start(3);
  auto c = bed->Client(2);
  REQUIRE(c->Put("/state", "g1").ok());
  bed->member(1).Kill();
  auto list = c->MemberList();
  INFO(list.status().message());
  REQUIRE(list.ok());
  REQUIRE(list->members.size() == 3);
  uint64_t lost = 0;
  for (const etcd::Member& m : list->members) {
    CHECK(m.peer_urls.size() == 1);
    if (m.name == "m1") lost = m.id;
  }
  REQUIRE(lost != 0);
  auto removed = c->MemberRemove(lost);
  INFO(removed.status().message());
  REQUIRE(removed.ok());
  CHECK(removed->members.size() == 2);

  EmbeddedEtcdOptions o = bed->member(0).options();
  o.name = "m3";
  o.data_dir = bed->dir() / "m3.data";
  o.client_port = testing::UnusedPort();
  o.peer_port = testing::UnusedPort();
  auto cert = bed->ca().IssueServer(o.name, {"127.0.0.1"});
  REQUIRE(cert.ok());
  auto tls = WriteTlsDir(bed->dir() / "m3.tls", bed->ca().cert_pem(), *cert, "member");
  REQUIRE(tls.ok());
  o.cert_file = tls->cert_file, o.key_file = tls->key_file;
  // etcd adds a member only once the others have been connected for 5 s (its
  // HealthInterval: "unhealthy cluster" until then; the bed is younger).
  Result<etcd::MembersResponse> added = Status::Unavailable("not tried");
  CHECK(testing::WaitUntil([&] { return (added = c->MemberAdd({PeerUrl(o)})).ok(); }, std::chrono::seconds(20)));
  INFO(added.status().message());
  REQUIRE(added.ok());
  CHECK(added->members.size() == 3);
  CHECK(added->added.id != 0);
  CHECK(added->added.name.empty());  // unstarted
  CHECK(added->added.peer_urls == std::vector<std::string>{PeerUrl(o)});
  o.initial_cluster = "m0=" + PeerUrl(bed->member(0).options()) + ",m2=" + PeerUrl(bed->member(2).options()) +
                      ",m3=" + PeerUrl(o);
  o.join_existing = true;
  auto m3 = EmbeddedEtcd::Start(o);
  REQUIRE(m3.ok());
  const Status ready = (*m3)->WaitReady(30);
  INFO(ready.message() << (*m3)->LastLines());
  REQUIRE(ready.ok());

  // A client that knew only m1 and m2 learns the others while m2 still answers.
  const etcd::TlsFiles client_tls{bed->client_tls().ca_file, bed->client_tls().cert_file, bed->client_tls().key_file};
  auto stale = etcd::Client::Create({{bed->endpoints()[1], bed->endpoints()[2]}, client_tls, 2});
  REQUIRE(stale.ok());
  auto learned = (*stale)->LearnEndpoints();
  INFO(learned.status().message());
  REQUIRE(learned.ok());
  CHECK(*learned == 2);  // m0 and m3
  CHECK((*stale)->LearnEndpoints().value() == 0);

  bed->member(2).Kill();  // m0 and m3 of 3: still a quorum
  auto through_learned = (*stale)->Put("/state", "g1b");
  INFO(through_learned.status().message());
  CHECK(through_learned.ok());
  auto after = etcd::Client::Create({{bed->endpoints()[0], (*m3)->client_url()}, client_tls, 2});
  REQUIRE(after.ok());
  auto put = (*after)->Put("/state", "g2");
  INFO(put.status().message());
  CHECK(put.ok());
  auto named = (*after)->MemberList();
  REQUIRE(named.ok());
  bool started = false;
  for (const etcd::Member& m : named->members) started |= m.name == "m3" && !m.client_urls.empty();
  CHECK(started);
  // Removing m0 now would leave m3 alone with dead m2: etcd refuses it.
  uint64_t m0 = 0;
  for (const etcd::Member& m : named->members) m0 = m.name == "m0" ? m.id : m0;
  auto refused = (*after)->MemberRemove(m0);
  CHECK_FALSE(refused.ok());
  INFO(refused.status().message());
  (*m3)->Stop(5);
}

// A standby SIGTERMed while its member waits for the others (CI's loaded
// runs: up to 60 s) must not sit out that wait, or the launcher's SIGKILL
// leaves the member's files.
TEST_CASE("embedded etcd: a member waiting for a quorum stops waiting when asked", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  EmbeddedEtcdOptions o = bed->member(0).options();
  o.name = "m1";
  o.data_dir = bed->dir() / "m1.data";
  o.client_port = testing::UnusedPort();
  o.peer_port = testing::UnusedPort();
  o.initial_cluster = "m1=" + PeerUrl(o) + ",m2=https://127.0.0.1:" + std::to_string(testing::UnusedPort());
  auto m = EmbeddedEtcd::Start(o);
  REQUIRE(m.ok());
  int asked = 0;
  const Status st = (*m)->WaitReady(60, [&] { return ++asked == 3; });
  CHECK(st.code() == Status::Code::kAborted);
  CHECK(st.message() == "etcd member 'm1' (" + (*m)->client_url() + "): stopped before it served clients");
  CHECK(asked == 3);
}

TEST_CASE("embedded etcd: Stop ends the member's process group", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  const pid_t pid = bed->member(0).pid();
  CHECK(::kill(pid, 0) == 0);
  bed->member(0).Stop(5);
  CHECK(::kill(pid, 0) != 0);
  CHECK(::kill(-pid, 0) != 0);
}

TEST_CASE("embedded etcd: a member dies with the process that started it", "[etcd]") {
  testing::TempDir dir("dslaunch-etcd-orphan");
  auto ca = JobCa::Create("orphan");
  REQUIRE(ca.ok());
  auto cert = ca->IssueServer("m0", {"127.0.0.1"});
  auto tls = WriteTlsDir(dir / "tls", ca->cert_pem(), *cert, "member");
  REQUIRE(tls.ok());
  EmbeddedEtcdOptions o;
  o.program = testing::EtcdProgram();
  o.name = "m0";
  o.data_dir = dir / "m0.data";
  o.client_port = testing::UnusedPort();
  o.peer_port = testing::UnusedPort();
  o.ca_file = tls->ca_file, o.cert_file = tls->cert_file, o.key_file = tls->key_file;
  int report[2];
  REQUIRE(::pipe(report) == 0);
  const pid_t owner = ::fork();  // no thread runs here yet: the child may start one
  REQUIRE(owner >= 0);
  if (owner == 0) {
    auto m = EmbeddedEtcd::Start(o);
    const pid_t pid = m.ok() ? (*m)->pid() : -1;
    (void)!::write(report[1], &pid, sizeof(pid));
    ::pause();  // until SIGKILLed: no destructor stops the member
    ::_exit(0);
  }
  ::close(report[1]);
  pid_t member = -1;
  REQUIRE(::read(report[0], &member, sizeof(member)) == sizeof(member));
  ::close(report[0]);
  REQUIRE(member > 0);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, member, 0));
  REQUIRE(pidfd >= 0);
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  pollfd p{pidfd, POLLIN, 0};
  const int ended = ::poll(&p, 1, 20000);  // readable once the member has exited
  if (ended != 1) ::kill(member, SIGKILL);  // ours, and it outlived its owner: end it, and fail
  ::close(pidfd);
  CHECK(ended == 1);
}

}  // namespace
}  // namespace ds::failover
