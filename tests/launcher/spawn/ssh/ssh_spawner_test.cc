// SshSpawner / SshSession / ShipAgent. [unit] cases are pure; [cluster] cases
// need the netns cluster (tests/cluster/with-cluster) and skip without it.
#include "launcher/spawn/ssh/ssh_spawner.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

#include <catch2/catch.hpp>

#include "common/strings.h"
#include "launcher/spawn/exit_signal.h"
#include "launcher/spawn/parallel_for.h"
#include "launcher/spawn/ssh/remote_command.h"
#include "launcher/spawn/ssh/ship_agent.h"
#include "tests/launcher/spawn/ssh/cluster_env.h"

namespace ds {
namespace {

using test::LoadTestCluster;
using test::ReadFile;
using test::TestCluster;
using test::WaitUntil;
using test::WriteFile;

SshOptions ClusterOptions(const TestCluster& c) {
  SshOptions o;
  o.config_file = c.ssh_config();
  o.connect_timeout = 5;
  o.host_key_policy = HostKeyPolicy::kYes;
  o.stop_grace = 2;
  return o;
}

// A per-test scratch dir under /tmp (shared with the namespaces).
std::string Scratch(const std::string& tag) {
  std::string d = "/tmp/dsl-test-" + tag + "-" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// Process ids running in namespace `ns` other than its sshd.
std::vector<std::string> NonSshdPids(const std::string& ns, const std::string& sshd_pidfile) {
  std::string sshd = std::string(Trim(ReadFile(sshd_pidfile)));
  std::vector<std::string> out;
  FILE* p = popen(("ip netns pids " + ns).c_str(), "r");
  char buf[64];
  while (p && fgets(buf, sizeof(buf), p)) {
    std::string pid(Trim(buf));
    if (!pid.empty() && pid != sshd) out.push_back(pid);
  }
  if (p) pclose(p);
  return out;
}

}  // namespace


TEST_CASE("ParseHostKeyPolicy accepts the three policies and suggests on typos", "[unit]") {
  CHECK(*ParseHostKeyPolicy("yes") == HostKeyPolicy::kYes);
  CHECK(*ParseHostKeyPolicy("accept-new") == HostKeyPolicy::kAcceptNew);
  CHECK(*ParseHostKeyPolicy("no") == HostKeyPolicy::kNo);
  auto bad = ParseHostKeyPolicy("acept-new");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "strict_host_key_checking: expected yes, accept-new or no, got 'acept-new' (did you mean 'accept-new'?)");
  CHECK_FALSE(ParseHostKeyPolicy("").ok());
}

TEST_CASE("ParallelFor visits every index once with at most fanout threads", "[unit]") {
  for (int fanout : {1, 3, 32}) {
    std::vector<std::atomic<int>> seen(50);
    std::atomic<int> live{0}, peak{0};
    ParallelFor(seen.size(), fanout, [&](size_t i) {
      int now = ++live;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {}
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      seen[i]++;
      --live;
    });
    for (auto& s : seen) CHECK(s.load() == 1);
    CHECK(peak.load() <= fanout);
  }
  int calls = 0;
  ParallelFor(0, 4, [&](size_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("SshSpawner: unresolvable host fails with the host name and ssh's reason", "[unit]") {
  SshOptions o;
  o.config_file = "/dev/null";
  o.connect_timeout = 2;
  AgentSpec s;
  s.host = "no-such-host.invalid";
  s.argv = {"true"};
  auto results = SshSpawner(o).Start({s});
  REQUIRE(results.size() == 1);
  REQUIRE_FALSE(results[0].ok());
  CHECK(StartsWith(results[0].status().message(), "no-such-host.invalid: "));
  CHECK(results[0].status().message().size() > std::string("no-such-host.invalid: ").size());
}

TEST_CASE("SshSpawner starts a command on every node, secret on stdin, exit status back", "[cluster]") {
  TestCluster c = LoadTestCluster();
  if (c.nodes.empty()) DS_SKIP(test::kNoCluster);
  std::string dir = Scratch("spawn");
  std::vector<AgentSpec> specs;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    AgentSpec s;
    s.host = c.nodes[i].alias;
    s.node_index = static_cast<int>(i);
    s.argv = {"sh", "-c", "read s; echo \"$s $(hostname -I | cut -d' ' -f1) $DSLAUNCH_LOG\" > " + dir + "/out-" +
                              std::to_string(i) + "; exit 3"};
    s.stdin_payload = "secret-" + std::to_string(i) + "\n";
    specs.push_back(s);
  }
  setenv("DSLAUNCH_LOG", "WARN", 1);
  SshOptions o = ClusterOptions(c);
  o.fanout = 2;  // fewer threads than hosts: the pool must still reach all
  auto results = MakeSshSpawner(o)->Start(specs);
  REQUIRE(results.size() == c.nodes.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(c.nodes[i].alias);
    REQUIRE(results[i].ok());
    auto& h = *results[i];
    CHECK(WaitUntil([&] { return !h->Running(); }, 20));
    CHECK(h->ExitStatus() == 3);
    CHECK(ReadFile(dir + "/out-" + std::to_string(i)) ==
          "secret-" + std::to_string(i) + " " + c.nodes[i].addr + " WARN\n");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("SshSpawner: exit_fd becomes readable when the remote agent ends", "[cluster]") {
  TestCluster c = LoadTestCluster();
  if (c.nodes.empty()) DS_SKIP(test::kNoCluster);
  std::string dir = Scratch("exitfd");
  AgentSpec s;
  s.host = c.nodes[0].alias;
  s.argv = {"sh", "-c", "while [ ! -e " + dir + "/go ]; do sleep 0.01; done; exit 4"};
  auto results = SshSpawner(ClusterOptions(c)).Start({s});
  REQUIRE(results[0].ok());
  auto& h = *results[0];
  REQUIRE(h->exit_fd() >= 0);
  CHECK_FALSE(WaitReadable(h->exit_fd(), 0.3));
  CHECK(h->Running());
  WriteFile(dir + "/go", "");
  CHECK(WaitReadable(h->exit_fd(), 20));
  CHECK_FALSE(h->Running());
  CHECK(h->ExitStatus() == 4);
  std::filesystem::remove_all(dir);
}

TEST_CASE("SshSpawner: one refused host does not hide the others", "[cluster]") {
  TestCluster c = LoadTestCluster();
  if (c.nodes.size() < 2) DS_SKIP("the netns test cluster has fewer than 2 nodes");
  std::vector<AgentSpec> specs(2);
  specs[0].host = c.nodes[0].alias;
  specs[0].ssh_port = 2222;  // nothing listens there
  specs[0].argv = {"true"};
  specs[1].host = c.nodes[1].alias;
  specs[1].argv = {"true"};
  auto results = SshSpawner(ClusterOptions(c)).Start(specs);
  REQUIRE_FALSE(results[0].ok());
  CHECK(results[0].status().message().find(c.nodes[0].alias + ": ") == 0);
  CHECK(results[0].status().message().find("onnection refused") != std::string::npos);
  REQUIRE(results[1].ok());
  CHECK(WaitUntil([&] { return !(*results[1])->Running(); }, 20));
  CHECK((*results[1])->ExitStatus() == 0);
}

TEST_CASE("SshSession: host key policy", "[cluster]") {
  TestCluster c = LoadTestCluster();
  if (c.nodes.size() < 2) DS_SKIP("the netns test cluster has fewer than 2 nodes");
  std::string dir = Scratch("hostkey");
  std::string config = ReadFile(c.ssh_config());
  auto with_known_hosts = [&](const std::string& kh_text) {
    WriteFile(dir + "/known_hosts", kh_text);
    std::string cfg = config;
    for (size_t p; (p = cfg.find(c.known_hosts())) != std::string::npos;)
      cfg.replace(p, c.known_hosts().size(), dir + "/known_hosts");
    WriteFile(dir + "/ssh_config", cfg);
    SshOptions o = ClusterOptions(c);
    o.config_file = dir + "/ssh_config";
    return o;
  };
  const std::string n0 = c.nodes[0].alias;

  SECTION("a wrong key is refused with a clear message (policies yes and accept-new)") {
    // Give n0 the key of n1.
    std::string kh = ReadFile(c.known_hosts());
    std::string line1 = kh.substr(kh.find(c.nodes[1].alias + ","));
    line1 = line1.substr(line1.find(' '));
    line1 = line1.substr(0, line1.find('\n'));
    for (HostKeyPolicy p : {HostKeyPolicy::kYes, HostKeyPolicy::kAcceptNew}) {
      SshOptions o = with_known_hosts(n0 + "," + c.nodes[0].addr + line1 + "\n");
      o.host_key_policy = p;
      auto s = SshSession::Connect(SshTarget{n0, "", {}}, o);
      REQUIRE_FALSE(s.ok());
      CHECK(s.status().code() == Status::Code::kPermissionDenied);
      CHECK(StartsWith(s.status().message(), n0 + ": host key verification failed: the key offered by " + n0 +
                                                 " (" + c.nodes[0].addr + ") does not match the one in " + dir +
                                                 "/known_hosts (possible man-in-the-middle attack"));
    }
  }
  SECTION("unknown host: yes refuses, no connects without writing, accept-new adds it") {
    SshOptions o = with_known_hosts("");
    o.host_key_policy = HostKeyPolicy::kYes;
    auto s = SshSession::Connect(SshTarget{n0, "", {}}, o);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("is not in " + dir + "/known_hosts and strict_host_key_checking=yes") !=
          std::string::npos);
    o.host_key_policy = HostKeyPolicy::kNo;
    CHECK(SshSession::Connect(SshTarget{n0, "", {}}, o).ok());
    CHECK(ReadFile(dir + "/known_hosts").empty());
    o.host_key_policy = HostKeyPolicy::kAcceptNew;
    REQUIRE(SshSession::Connect(SshTarget{n0, "", {}}, o).ok());
    CHECK_FALSE(ReadFile(dir + "/known_hosts").empty());
    o.host_key_policy = HostKeyPolicy::kYes;  // now known
    CHECK(SshSession::Connect(SshTarget{n0, "", {}}, o).ok());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("SshSpawner: Terminate stops the remote process, nothing left in the namespace", "[cluster]") {
  TestCluster c = LoadTestCluster();
  if (c.nodes.empty()) DS_SKIP(test::kNoCluster);
  std::string dir = Scratch("term");
  std::vector<AgentSpec> specs;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    AgentSpec s;
    s.host = c.nodes[i].alias;
    s.argv = {"sh", "-c", "trap 'kill $!; exit 143' TERM; sleep 300 & touch " + dir + "/ready-" +
                              std::to_string(i) + "; wait"};
    specs.push_back(s);
  }
  auto results = SshSpawner(ClusterOptions(c)).Start(specs);
  for (size_t i = 0; i < results.size(); ++i) {
    REQUIRE(results[i].ok());
    CHECK(WaitUntil([&] { return std::filesystem::exists(dir + "/ready-" + std::to_string(i)); }, 20));
    CHECK((*results[i])->Running());
  }
  for (auto& r : results) (*r)->Terminate();
  for (size_t i = 0; i < results.size(); ++i) {
    CHECK_FALSE((*results[i])->Running());
    std::string pidfile = c.dir + "/pids/sshd-" + std::to_string(i) + ".pid";
    bool gone = WaitUntil([&] { return NonSshdPids(c.nodes[i].netns, pidfile).empty(); }, 10);
    if (!gone) for (auto& p : NonSshdPids(c.nodes[i].netns, pidfile)) std::system(("ps -o pid,ppid,stat,cmd -p " + p + " | tail -1").c_str());
    CHECK(gone);
    CHECK((*results[i])->ExitStatus() == 143);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("ShipAgent copies the binary to a per-job dir and removes it after", "[cluster]") {
  TestCluster c = LoadTestCluster();
  if (c.nodes.empty()) DS_SKIP(test::kNoCluster);
  std::string dir = Scratch("ship");
  std::string agent = dir + "/fake-agent";
  WriteFile(agent, "#!/bin/sh\nread s\necho \"$0 $s\" > " + dir + "/ran\n");
  std::filesystem::permissions(agent, std::filesystem::perms::owner_all);
  SshOptions o = ClusterOptions(c);
  o.ship_agent = true;
  AgentSpec s;
  s.host = c.nodes[0].alias;
  s.argv = {agent, "--job-id", "shipjob"};
  s.stdin_payload = "abc\n";

  SECTION("shipped, run, removed") {
    auto results = SshSpawner(o).Start({s});
    REQUIRE(results.size() == 1);
    REQUIRE(results[0].ok());
    CHECK(WaitUntil([&] { return !(*results[0])->Running(); }, 20));
    (*results[0])->Terminate();  // joins the pump, which removed the dir
    std::string ran(Trim(ReadFile(dir + "/ran")));
    REQUIRE(ran.find(" abc") != std::string::npos);
    std::string remote = ran.substr(0, ran.find(' '));
    CHECK(remote.find("/dslaunch-shipjob.") != std::string::npos);
    CHECK(std::filesystem::path(remote).filename() == "dsagent");
    CHECK_FALSE(std::filesystem::exists(std::filesystem::path(remote).parent_path()));
  }
  SECTION("a missing local binary is a clear error") {
    s.argv = {dir + "/missing-agent"};
    auto bad = SshSpawner(o).Start({s});
    REQUIRE_FALSE(bad[0].ok());
    CHECK(bad[0].status().message() == c.nodes[0].alias + ": --ship-agent: cannot read the local agent binary '" +
                                           dir + "/missing-agent' (expected an absolute path to dsagent)");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace ds

namespace ds {

TEST_CASE("SshHostName follows the ssh config's HostName", "[unit]") {
  std::string cfg = "/tmp/dsl-test-hostname-" + std::to_string(getpid());
  test::WriteFile(cfg, "Host alias1\n  HostName 10.1.2.3\n  User bob\n");
  SshOptions o;
  o.config_file = cfg;
  CHECK(SshHostName("alias1", o) == "10.1.2.3");
  CHECK(SshHostName("other", o) == "other");
  std::filesystem::remove(cfg);
}

}  // namespace ds

namespace ds {

TEST_CASE("SshSpawner: a silent address fails within the connect timeout, naming the host", "[cluster]") {
  test::TestCluster c = test::LoadTestCluster();
  if (c.nodes.empty()) DS_SKIP(test::kNoCluster);
  // An address on the cluster's subnet that no namespace holds.
  std::string addr = c.nodes[0].addr.substr(0, c.nodes[0].addr.rfind('.')) + ".250";
  SshOptions o;
  o.config_file = "/dev/null";
  o.connect_timeout = 2;
  AgentSpec s;
  s.host = addr;
  s.argv = {"true"};
  auto t0 = std::chrono::steady_clock::now();
  auto r = SshSpawner(o).Start({s});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(r[0].ok());
  INFO(r[0].status().message());
  CHECK(StartsWith(r[0].status().message(), addr + ": "));
  CHECK(took < o.connect_timeout + 4);  // generous: proves "does not hang"
}

}  // namespace ds

namespace ds {

TEST_CASE("SshSpawner refuses a multi-line stdin payload before connecting", "[unit]") {
  AgentSpec s;
  s.host = "h1";
  s.argv = {"dsagent"};
  s.stdin_payload = "line1\nline2\n";
  auto r = SshSpawner(SshOptions{}).Start({s});
  REQUIRE_FALSE(r[0].ok());
  CHECK(r[0].status().message() == "h1: the agent's stdin payload must be one line");
}

}  // namespace ds
