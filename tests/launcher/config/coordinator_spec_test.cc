// The job file's coordinator: section (launcher/config/coordinator_spec.h):
// both modes, the default grace, and every error word for word with its
// file:line:col and key, read through ParseJobFile as a user's file is.
#include "launcher/config/coordinator_spec.h"

#include <catch2/catch.hpp>

#include "common/strings.h"
#include "launcher/config/job_spec.h"

namespace ds {
namespace {

JobSpec Parse(const std::string& text) {
  auto r = ParseJobFile("command: [x]\n" + text, "train.yaml");
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *r;
}

// The error lines of a job file with `text` after its first line (the echoed
// lines, carets and the "N errors" line left out), in the file's order.
std::vector<std::string> Errors(const std::string& text) {
  auto r = ParseJobFile("command: [x]\n" + text, "train.yaml");
  REQUIRE_FALSE(r.ok());
  std::vector<std::string> out;
  for (const std::string& line : Split(r.status().message(), '\n'))
    if (StartsWith(line, "train.yaml:") && line.size() > 11 && std::isdigit(static_cast<unsigned char>(line[11])))
      out.push_back(line);
  return out;
}

std::string ErrorOf(const std::string& text) {
  const std::vector<std::string> e = Errors(text);
  REQUIRE(e.size() == 1);
  return e[0];
}

const std::string kModes =
    "etcd: [HOST:PORT, ...] (an etcd your site runs) or replicas: N (dslaunch starts an etcd member and a standby "
    "coordinator on each of the first N hosts)";

TEST_CASE("coordinator: off without the section") {
  const JobSpec j = Parse("");
  CHECK_FALSE(j.coordinator.on());
  CHECK(j.coordinator.etcd.empty());
  CHECK(j.coordinator.replicas == 0);
  CHECK(j.coordinator.at.empty());
}

TEST_CASE("coordinator: a site etcd with its TLS files and prefix") {
  const JobSpec j = Parse(
      "coordinator:\n"
      "  etcd: [10.0.0.1:2379, etcd2.example:2379, '[fd00::3]:2379', https://etcd4:2379]\n"
      "  ca: /etc/etcd/ca.pem\n"
      "  cert: /etc/etcd/client.pem\n"
      "  key: /etc/etcd/client-key.pem\n"
      "  prefix: /jobs/dslaunch/\n"
      "  grace: 20s\n");
  const CoordinatorSpec& c = j.coordinator;
  CHECK(c.on());
  CHECK(c.etcd == std::vector<std::string>{"10.0.0.1:2379", "etcd2.example:2379", "[fd00::3]:2379",
                                           "https://etcd4:2379"});
  CHECK(c.replicas == 0);
  CHECK(c.ca == "/etc/etcd/ca.pem");
  CHECK(c.cert == "/etc/etcd/client.pem");
  CHECK(c.key == "/etc/etcd/client-key.pem");
  CHECK(c.prefix == "/jobs/dslaunch/");
  CHECK(c.grace_s == Approx(20));
  CHECK(c.at == "train.yaml:2:1");
  CHECK(c.etcd_at == "train.yaml:3:9");
  CHECK(c.replicas_at.empty());
  // The smallest: one endpoint, no TLS, the default prefix.
  const CoordinatorSpec one = Parse("coordinator: {etcd: [h:2379]}\n").coordinator;
  CHECK(one.etcd == std::vector<std::string>{"h:2379"});
  CHECK(one.ca.empty());
  CHECK(one.cert.empty());
  CHECK(one.prefix == "/dslaunch/");
  CHECK(one.grace_s == 0);
  // A block list, and cert with key but no ca (the system's CAs).
  const CoordinatorSpec block =
      Parse("coordinator:\n  etcd:\n    - e1:2379\n    - e2:2380\n  cert: c.pem\n  key: k.pem\n").coordinator;
  CHECK(block.etcd == std::vector<std::string>{"e1:2379", "e2:2380"});
  CHECK(block.cert == "c.pem");
  CHECK(block.key == "k.pem");
}

TEST_CASE("coordinator: embedded members on the first 3, 5 or 7 hosts") {
  for (int n : {3, 5, 7}) {
    const CoordinatorSpec c = Parse("coordinator:\n  replicas: " + std::to_string(n) + "\n").coordinator;
    CHECK(c.on());
    CHECK(c.replicas == n);
    CHECK(c.etcd.empty());
    CHECK(c.replicas_at == "train.yaml:3:13");
  }
  CHECK(Parse("coordinator: {replicas: 5, grace: 1m}\n").coordinator.grace_s == Approx(60));
  CHECK(Parse("coordinator: {replicas: 3, grace: 0.5}\n").coordinator.grace_s == Approx(0.5));
}

TEST_CASE("coordinator: grace defaults to 3 x elastic.heartbeat_timeout, wherever elastic: is") {
  const JobSpec plain = Parse("coordinator: {replicas: 3}\n");
  CHECK(plain.coordinator.grace_s == 0);
  CHECK(CoordinatorGrace(plain.coordinator, plain.elastic.heartbeat_timeout) == Approx(15));  // 3 x 5s
  // elastic: after coordinator: still counts: the default is computed from the parsed job.
  const JobSpec later = Parse("coordinator: {replicas: 3}\nelastic: {heartbeat_timeout: 8s}\n");
  CHECK(CoordinatorGrace(later.coordinator, later.elastic.heartbeat_timeout) == Approx(24));
  const JobSpec set = Parse("coordinator: {replicas: 3, grace: 2s}\nelastic: {heartbeat_timeout: 8s}\n");
  CHECK(CoordinatorGrace(set.coordinator, set.elastic.heartbeat_timeout) == Approx(2));
}

TEST_CASE("coordinator: one mode, not both, not neither") {
  CHECK(ErrorOf("coordinator:\n  etcd: [h:2379]\n  replicas: 3\n") ==
        "train.yaml:4:3: 'coordinator': etcd and replicas are both set; choose one: " + kModes);
  CHECK(ErrorOf("coordinator:\n  replicas: 3\n  etcd: [h:2379]\n") ==
        "train.yaml:4:3: 'coordinator': etcd and replicas are both set; choose one: " + kModes);
  CHECK(ErrorOf("coordinator:\n  grace: 10s\n") == "train.yaml:2:1: 'coordinator': expected " + kModes);
  CHECK(ErrorOf("coordinator: {}\n") == "train.yaml:2:1: 'coordinator': expected " + kModes);
  CHECK(ErrorOf("coordinator:\n") == "train.yaml:2:1: 'coordinator': expected " + kModes);
  CHECK(ErrorOf("coordinator: [h:2379]\n") == "train.yaml:2:14: 'coordinator': expected a mapping with " + kModes);
  CHECK(ErrorOf("coordinator: etcd\n") == "train.yaml:2:14: 'coordinator': expected a mapping with " + kModes);
}

TEST_CASE("coordinator: unknown and duplicate keys, with a did-you-mean") {
  CHECK(ErrorOf("coordinator:\n  etcd: [h:2379]\n  replica: 3\n") ==
        "train.yaml:4:3: unknown key 'replica' in coordinator (did you mean 'replicas'?)");
  // The unknown key does not hide the mode's absence: both are said.
  CHECK(Errors("coordinator:\n  etc: [h:2379]\n") ==
        std::vector<std::string>{"train.yaml:2:1: 'coordinator': expected " + kModes,
                                 "train.yaml:3:3: unknown key 'etc' in coordinator (did you mean 'etcd'?)"});
  CHECK(ErrorOf("coordinator:\n  replicas: 3\n  gracee: 1s\n") ==
        "train.yaml:4:3: unknown key 'gracee' in coordinator (did you mean 'grace'?)");
  CHECK(ErrorOf("coordinator:\n  replicas: 3\n  banana: 1\n") == "train.yaml:4:3: unknown key 'banana' in coordinator");
  CHECK(ErrorOf("coordinator:\n  replicas: 3\n  replicas: 5\n") == "train.yaml:4:3: duplicate key 'replicas'");
  CHECK(ErrorOf("cordinator: {replicas: 3}\n") ==
        "train.yaml:2:1: unknown key 'cordinator' (did you mean 'coordinator'?)");
}

TEST_CASE("coordinator.etcd: a non-empty list of HOST:PORT, port 1 to 65535, IPv6 in brackets") {
  const std::string list =
      "'coordinator.etcd': expected a non-empty list of HOST:PORT such as [etcd1:2379, etcd2:2379]";
  CHECK(ErrorOf("coordinator: {etcd: []}\n") == "train.yaml:2:21: " + list);
  CHECK(ErrorOf("coordinator:\n  etcd: etcd1:2379\n") == "train.yaml:3:9: " + list + ", got 'etcd1:2379'");
  CHECK(ErrorOf("coordinator:\n  etcd: {a: 1}\n") == "train.yaml:3:9: " + list);
  const std::string one = "'coordinator.etcd': expected HOST:PORT with a port from 1 to 65535 (an IPv6 address in "
                          "brackets: [fd00::1]:2379)";
  for (const char* bad : {"etcd1", "etcd1:0", "etcd1:65536", "etcd1:", ":2379", "etcd1:23x9", "fd00::1:2379",
                          "[fd00::1]", "[]:2379", "[x]:2379", "etcd 1:2379", "user@etcd1:2379", "etcd1:2379/v3",
                          "ftp://etcd1:2379"}) {
    INFO(bad);
    CHECK(ErrorOf(std::string("coordinator:\n  etcd: ['") + bad + "']\n") ==
          "train.yaml:3:10: " + one + ", got '" + bad + "'");
  }
  CHECK(ErrorOf("coordinator:\n  etcd: [[a, b]]\n") == "train.yaml:3:10: " + one);
  // Every bad endpoint is named, each at its own column.
  CHECK(Errors("coordinator:\n  etcd: [ok:1, bad, ok:2, 'x:0']\n") ==
        std::vector<std::string>{"train.yaml:3:16: " + one + ", got 'bad'", "train.yaml:3:27: " + one + ", got 'x:0'"});
  CHECK(ErrorOf("coordinator:\n  etcd: [h:2379, g:2379, h:2379]\n") ==
        "train.yaml:3:26: 'coordinator.etcd': 'h:2379' is listed twice");
}

TEST_CASE("coordinator.replicas: odd, from 3 to 7; 1 and even counts say why") {
  CHECK(ErrorOf("coordinator:\n  replicas: 1\n") ==
        "train.yaml:3:13: 'coordinator.replicas': expected an odd integer from 3 to 7, got 1: one member gives no "
        "failover (losing its host still ends the job)");
  CHECK(ErrorOf("coordinator:\n  replicas: 4\n") ==
        "train.yaml:3:13: 'coordinator.replicas': expected an odd integer from 3 to 7, got 4: a majority of an even "
        "count tolerates no more losses than one fewer (4 members and 3 both survive 1 lost)");
  CHECK(ErrorOf("coordinator:\n  replicas: 2\n") ==
        "train.yaml:3:13: 'coordinator.replicas': expected an odd integer from 3 to 7, got 2: a majority of an even "
        "count tolerates no more losses than one fewer (2 members and 1 both survive 0 lost)");
  CHECK(ErrorOf("coordinator:\n  replicas: 6\n") ==
        "train.yaml:3:13: 'coordinator.replicas': expected an odd integer from 3 to 7, got 6: a majority of an even "
        "count tolerates no more losses than one fewer (6 members and 5 both survive 2 lost)");
  for (const char* bad : {"0", "-3", "9", "8", "3.0", "three", "99999999999999999999"}) {
    INFO(bad);
    CHECK(ErrorOf(std::string("coordinator:\n  replicas: ") + bad + "\n") ==
          std::string("train.yaml:3:13: 'coordinator.replicas': expected an odd integer from 3 to 7, got '") + bad +
              "'");
  }
  CHECK(ErrorOf("coordinator:\n  replicas: [3]\n") ==
        "train.yaml:3:13: 'coordinator.replicas': expected an odd integer from 3 to 7");
}

TEST_CASE("coordinator.grace: a duration above 0, at most 1h") {
  for (const char* bad : {"0", "-1", "2h", "3601", "soon", "0s"}) {
    INFO(bad);
    CHECK(ErrorOf(std::string("coordinator:\n  replicas: 3\n  grace: ") + bad + "\n") ==
          std::string("train.yaml:4:10: 'coordinator.grace': expected a duration between 10ms and 1h such as 15s, "
                      "got '") + bad + "'");
  }
  CHECK(Parse("coordinator: {replicas: 3, grace: 1h}\n").coordinator.grace_s == Approx(3600));
}

TEST_CASE("coordinator: cert and key both or neither; TLS and prefix for a site etcd only") {
  CHECK(ErrorOf("coordinator:\n  etcd: [h:2379]\n  cert: c.pem\n") ==
        "train.yaml:4:3: 'coordinator.cert': is set without coordinator.key: a client certificate needs its private "
        "key (set both or neither)");
  CHECK(ErrorOf("coordinator:\n  etcd: [h:2379]\n  ca: ca.pem\n  key: k.pem\n") ==
        "train.yaml:5:3: 'coordinator.key': is set without coordinator.cert: a private key needs its client "
        "certificate (set both or neither)");
  CHECK(Errors("coordinator:\n  replicas: 3\n  ca: ca.pem\n  cert: c.pem\n  key: k.pem\n  prefix: /p/\n") ==
        std::vector<std::string>{
            "train.yaml:4:3: 'coordinator.ca': applies to etcd: only (replicas: starts an etcd with the job's own CA "
            "and certificates, made by dslaunch)",
            "train.yaml:5:3: 'coordinator.cert': applies to etcd: only (replicas: starts an etcd with the job's own "
            "CA and certificates, made by dslaunch)",
            "train.yaml:6:3: 'coordinator.key': applies to etcd: only (replicas: starts an etcd with the job's own CA "
            "and certificates, made by dslaunch)",
            "train.yaml:7:3: 'coordinator.prefix': applies to etcd: only (replicas: starts an etcd that holds this "
            "job's keys alone)"});
  CHECK(ErrorOf("coordinator:\n  etcd: [h:2379]\n  ca: ''\n") ==
        "train.yaml:4:7: 'coordinator.ca': expected a file path (PEM), got ''");
  CHECK(ErrorOf("coordinator:\n  etcd: [h:2379]\n  ca: [a]\n") ==
        "train.yaml:4:7: 'coordinator.ca': expected a file path (PEM)");
}

TEST_CASE("coordinator.standbys: 0 to 7 with a site etcd; they must fit the hosts") {
  CHECK(Parse("coordinator: {etcd: [h:2379], standbys: 2}\n").coordinator.standbys == 2);
  CHECK(Parse("coordinator: {etcd: [h:2379]}\n").coordinator.standbys == 0);
  for (const char* bad : {"-1", "8", "two"}) {
    INFO(bad);
    CHECK(ErrorOf(std::string("coordinator:\n  etcd: [h:2379]\n  standbys: ") + bad + "\n") ==
          std::string("train.yaml:4:13: 'coordinator.standbys': expected 0 to 7 (a standby coordinator on each of "
                      "the first N hosts), got '") + bad + "'");
  }
  CHECK(ErrorOf("coordinator:\n  replicas: 3\n  standbys: 1\n") ==
        "train.yaml:4:3: 'coordinator.standbys': applies to etcd: only (replicas: N starts a standby on each of its "
        "N hosts)");
  CoordinatorSpec spec = Parse("coordinator: {etcd: [h:2379], standbys: 3}\n").coordinator;
  CHECK(CheckReplicasFit(spec, 3).ok());
  CHECK(CheckReplicasFit(spec, 2).message() ==
        "train.yaml:2:41: coordinator.standbys is 3 but the job has 2 hosts; a standby runs on each of the first N "
        "hosts: write standbys: 2 or add hosts");
}

TEST_CASE("coordinator.prefix: starts with '/', no whitespace") {
  for (const char* bad : {"dslaunch/", "''", "'/ds launch/'", "\"/ds\\tlaunch\""}) {
    INFO(bad);
    const std::string e = ErrorOf(std::string("coordinator:\n  etcd: [h:2379]\n  prefix: ") + bad + "\n");
    CHECK(e.starts_with("train.yaml:4:11: 'coordinator.prefix': expected a key prefix that starts with '/' and holds "
                        "no whitespace, such as /dslaunch/, got '"));
  }
  CHECK(ErrorOf("coordinator:\n  etcd: [h:2379]\n  prefix: dslaunch/\n") ==
        "train.yaml:4:11: 'coordinator.prefix': expected a key prefix that starts with '/' and holds no whitespace, "
        "such as /dslaunch/, got 'dslaunch/'");
  CHECK(Parse("coordinator: {etcd: [h:2379], prefix: /}\n").coordinator.prefix == "/");
}

TEST_CASE("coordinator: every problem of the section is said at once, with the others of the file") {
  auto r = ParseJobFile(
      "command: [x]\n"
      "coordinator:\n"
      "  replicas: 4\n"
      "  grace: 0\n"
      "  prefix: p\n"
      "pty: maybe\n",
      "train.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        "train.yaml:3:13: 'coordinator.replicas': expected an odd integer from 3 to 7, got 4: a majority of an even "
        "count tolerates no more losses than one fewer (4 members and 3 both survive 1 lost)\n"
        "  replicas: 4\n"
        "            ^\n"
        "train.yaml:4:10: 'coordinator.grace': expected a duration between 10ms and 1h such as 15s, got '0'\n"
        "  grace: 0\n"
        "         ^\n"
        "train.yaml:5:3: 'coordinator.prefix': applies to etcd: only (replicas: starts an etcd that holds this job's "
        "keys alone)\n"
        "  prefix: p\n"
        "  ^\n"
        "train.yaml:6:6: 'pty': expected true or false\n"
        "pty: maybe\n"
        "     ^\n"
        "train.yaml: 4 errors");
}

TEST_CASE("CheckReplicasFit: a host of its own for every replica") {
  CoordinatorSpec c;
  CHECK(CheckReplicasFit(c, 1).ok());  // no replicas asked for
  c.replicas = 3;
  c.replicas_at = "train.yaml:3:13";
  CHECK(CheckReplicasFit(c, 3).ok());
  CHECK(CheckReplicasFit(c, 100).ok());
  CHECK(CheckReplicasFit(c, 2).message() ==
        "train.yaml:3:13: coordinator.replicas is 3 but the job has 2 hosts; each replica (an etcd member and a "
        "standby coordinator) needs a host of its own: failover needs 3 hosts or more: add hosts or remove "
        "coordinator:");
  CHECK(CheckReplicasFit(c, 1).message() ==
        "train.yaml:3:13: coordinator.replicas is 3 but the job has 1 host; each replica (an etcd member and a "
        "standby coordinator) needs a host of its own: failover needs 3 hosts or more: add hosts or remove "
        "coordinator:");
  c.replicas = 7;
  CHECK(CheckReplicasFit(c, 6).message() ==
        "train.yaml:3:13: coordinator.replicas is 7 but the job has 6 hosts; each replica (an etcd member and a "
        "standby coordinator) needs a host of its own: write replicas: 5 or add hosts");
  c.replicas = 5;
  c.replicas_at.clear();
  CHECK(CheckReplicasFit(c, 3).message() ==
        "coordinator.replicas is 5 but the job has 3 hosts; each replica (an etcd member and a standby coordinator) "
        "needs a host of its own: write replicas: 3 or add hosts");
  CHECK(CheckReplicasFit(c, 3).code() == Status::Code::kInvalidArgument);
}

TEST_CASE("IsEtcdEndpoint: the etcd client's own endpoint form") {
  for (const char* ok : {"h:2379", "10.0.0.1:1", "a-b.c_d:65535", "[fd00::1]:2379", "[fe80::1%eth0]:2379",
                         "http://h:2379", "https://h:2379", "https://h:2379/"})
    CHECK(IsEtcdEndpoint(ok));
  for (const char* bad : {"", "h", "h:0", "h:65536", "fd00::1:2379", "[x]:2379", "h h:1", "ftp://h:1"})
    CHECK_FALSE(IsEtcdEndpoint(bad));
}

}  // namespace
}  // namespace ds
