// dslaunch check. [unit]: evaluation and the table, word for word.
// [cluster]: ProbeAllHosts against the netns cluster, with one sshd stopped.
#include "launcher/cmd/preflight.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <catch2/catch.hpp>

#include "common/strings.h"
#include "tests/launcher/spawn/ssh/cluster_env.h"

namespace ds {
namespace {

HostEntry Host(const std::string& name, int slots, int line) {
  HostEntry h;
  h.name = name;
  h.slots = slots;
  h.line = line;
  return h;
}

PreflightOptions Opts() {
  PreflightOptions o;
  o.agent_path = "/opt/ds/dsagent";
  o.working_dir = "/work";
  o.master_port = 29500;
  o.local_version = "0.1.0";
  return o;
}

const char* kGoodProbe =
    "agent=ok dsagent 0.1.0\nwd=ok\ncpus=8\ngpus=0\nown=\nroute=10.0.0.1 dev eth1 src 10.0.0.2 uid 0\nport=free\n"
    "time=1.0\n";

}  // namespace

TEST_CASE("EvaluateProbe: a ready host", "[unit]") {
  PreflightRow r = EvaluateProbe(Host("w1", 4, 2), "10.0.0.2", kGoodProbe, 0.01, 0.001, Opts());
  CHECK(r.ok());
  CHECK(r.ssh.text == "10.0.0.2");
  CHECK(r.agent.text == "0.1.0");
  CHECK(r.slots.text == "4/8 cpus");
  CHECK(r.iface.text == "eth1 10.0.0.2");
  CHECK(r.port.text == "free");
  CHECK(r.clock.text == "+0.010s");
}

TEST_CASE("EvaluateProbe: every failure is named with the host", "[unit]") {
  std::string probe =
      "agent=missing\nwd=missing\ncpus=2\ngpus=0\nown=eth0\nport=busy\ntime=1.0\n";
  PreflightRow r = EvaluateProbe(Host("w0", 4, 1), "10.0.0.1", probe, -3.5, 0.001, Opts());
  CHECK_FALSE(r.ok());
  CHECK(r.problems == std::vector<std::string>{
                          "w0: no dsagent at /opt/ds/dsagent (install it there, set --agent-path, or use --ship-agent)",
                          "w0: working directory /work does not exist",
                          "w0: slots=4 (hostfile line 1) but the host has 2 CPUs",
                          "w0: master port 29500 is already in use",
                          "w0: clock skew -3.500s exceeds 2s (run NTP/chrony on the nodes)",
                      });
  CHECK(r.iface.text == "eth0 (master)");
}

TEST_CASE("EvaluateProbe: GPUs count instead of CPUs; version mismatch; ship-agent", "[unit]") {
  std::string probe = "agent=ok dsagent 0.0.9\nwd=skip\ncpus=64\ngpus=2\nroute=RTNETLINK answers: Network is unreachable\ntime=1\n";
  PreflightRow r = EvaluateProbe(Host("g", 4, 7), "", probe, 0, 0, Opts());
  CHECK(r.problems == std::vector<std::string>{
                          "g: dsagent at /opt/ds/dsagent reports 'dsagent 0.0.9', expected version 0.1.0 (the launcher's)",
                          "g: slots=4 (hostfile line 7) but the host has 2 GPUs",
                          "g: no route to the master: RTNETLINK answers: Network is unreachable",
                      });
  PreflightOptions o = Opts();
  o.ship_agent = true;
  CHECK(EvaluateProbe(Host("g", 2, 7), "", probe, 0, 0, o).agent.text == "shipped");
}

TEST_CASE("FormatPreflightTable: aligned columns, problems, a count", "[unit]") {
  std::vector<PreflightRow> rows;
  rows.push_back(EvaluateProbe(Host("w1", 4, 2), "10.0.0.2", kGoodProbe, 0.01, 0.001, Opts()));
  rows.push_back(UnreachableRow(Host("w2", 4, 3), Status::Unavailable("w2: connection refused")));
  CHECK(FormatPreflightTable(rows) ==
        "HOST  SSH               AGENT  WORKDIR  SLOTS     IFACE->MASTER  PORT  CLOCK\n"
        "w1    10.0.0.2          0.1.0  ok       4/8 cpus  eth1 10.0.0.2  free  +0.010s\n"
        "w2    FAIL unreachable  -      -        -         -              -     -\n"
        "  w2: connection refused\n"
        "1 of 2 hosts ready\n");
}

TEST_CASE("ProbeAllHosts: a stopped sshd is named with 'connection refused' within the connect timeout", "[cluster]") {
  test::TestCluster c = test::LoadTestCluster();
  if (c.nodes.size() < 3) return;
  std::string dir = "/tmp/dsl-test-check-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string agent = dir + "/dsagent";
  test::WriteFile(agent, "#!/bin/sh\necho \"dsagent " DSLAUNCH_VERSION "\"\n");
  std::filesystem::permissions(agent, std::filesystem::perms::owner_all);

  Hostfile hf;
  for (const auto& n : c.nodes) hf.hosts.push_back(Host(n.alias, 2, static_cast<int>(hf.hosts.size()) + 1));
  PreflightOptions o;
  o.ssh.config_file = c.ssh_config();
  o.ssh.host_key_policy = HostKeyPolicy::kYes;
  o.ssh.connect_timeout = 3;
  o.agent_path = agent;
  o.working_dir = dir;
  o.master_port = 29555;

  std::vector<PreflightRow> rows = ProbeAllHosts(hf, o);
  REQUIRE(rows.size() == c.nodes.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO(FormatPreflightTable(rows));
    CHECK(rows[i].ok());
    CHECK(rows[i].ssh.text == c.nodes[i].addr);
    CHECK(rows[i].iface.text == (i == 0 ? "eth0 (master)" : "eth0 " + c.nodes[i].addr));
  }
  CHECK(rows[0].port.text == "free");

  // Stop node 1's sshd (our own daemon, by its pid file).
  pid_t sshd = static_cast<pid_t>(*ParseInt(Trim(test::ReadFile(c.dir + "/pids/sshd-1.pid"))));
  REQUIRE(kill(sshd, SIGTERM) == 0);
  for (int i = 0; i < 100 && kill(sshd, 0) == 0; ++i) usleep(20000);
  auto t0 = std::chrono::steady_clock::now();
  rows = ProbeAllHosts(hf, o);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < o.ssh.connect_timeout + 10);  // generous: proves "does not hang"
  std::string table = FormatPreflightTable(rows);
  INFO(table);
  CHECK_FALSE(rows[1].ok());
  CHECK(rows[1].problems == std::vector<std::string>{c.nodes[1].alias + ": connection refused"});
  CHECK(rows[0].ok());
  CHECK(rows[2].ok());
  CHECK(table.find("2 of 3 hosts ready") != std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace ds
