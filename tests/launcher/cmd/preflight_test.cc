// dslaunch check over SSH. [cluster]: ProbeAllHosts against the netns
// cluster, with one sshd stopped.
#include "launcher/cmd/preflight.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <catch2/catch.hpp>

#include "common/strings.h"
#include "common/version.h"
#include "tests/launcher/spawn/ssh/cluster_env.h"

namespace ds {

TEST_CASE("ProbeAllHosts: a stopped sshd is named with 'connection refused' within the connect timeout", "[cluster]") {
  test::TestCluster c = test::LoadTestCluster();
  if (c.nodes.size() < 3) DS_SKIP("the netns test cluster has fewer than 3 nodes");
  std::string dir = "/tmp/dsl-test-check-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string agent = dir + "/dsagent";
  test::WriteFile(agent, "#!/bin/sh\necho \"dsagent " DSLAUNCH_VERSION "\"\n");
  std::filesystem::permissions(agent, std::filesystem::perms::owner_all);

  Hostfile hf;
  for (const auto& n : c.nodes) {
    HostEntry h;
    h.name = n.alias;
    h.slots = 2;
    h.line = static_cast<int>(hf.hosts.size()) + 1;
    hf.hosts.push_back(h);
  }
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
