// ElasticStartAllowed / PlanOnReachable (pure) and SshOptionsForJob's
// precedence. ProbeNodes needs real sshds: tests/cluster/elastic_start_test.sh.
#include "launcher/ssh_preflight.h"

#include <catch2/catch.hpp>

#include "launcher/spawner_factory.h"

namespace ds {
namespace {

LaunchPlan Plan(const std::string& hostfile, int min_nodes, bool min_set, int max_nodes = 0) {
  auto hf = ParseHostfile(hostfile, "hf");
  REQUIRE(hf.ok());
  auto hosts = SelectHosts(*hf, {});
  REQUIRE(hosts.ok());
  JobSpec job;
  job.command = {"true"};
  job.elastic.min_nodes = min_nodes;
  job.elastic.min_nodes_set = min_set;
  job.elastic.max_nodes = max_nodes;
  auto p = MakePlan(*hosts, job, false);
  REQUIRE(p.ok());
  p->hostfile_path = "hf";
  return *p;
}

const char* kThree = "n0 slots=2\nn1 slots=2\nn2 slots=2\n";

TEST_CASE("ElasticStartAllowed: only with min_nodes written and below the node count", "[unit]") {
  CHECK_FALSE(ElasticStartAllowed(Plan(kThree, 1, false)));  // the default 1 is not a request
  CHECK(ElasticStartAllowed(Plan(kThree, 1, true)));
  CHECK(ElasticStartAllowed(Plan(kThree, 2, true)));
  CHECK_FALSE(ElasticStartAllowed(Plan(kThree, 3, true)));
}

TEST_CASE("PlanOnReachable: a middle host down, ranks dense in hostfile order", "[unit]") {
  auto r = PlanOnReachable(Plan(kThree, 2, true), {true, false, true});
  REQUIRE(r.ok());
  REQUIRE(r->nodes.size() == 2);
  CHECK(r->world_size == 4);
  CHECK(r->nodes[0].host.name == "n0");
  CHECK(r->nodes[0].node_rank == 0);
  CHECK(r->nodes[0].first_rank == 0);
  CHECK(r->nodes[1].host.name == "n2");
  CHECK(r->nodes[1].node_rank == 1);
  CHECK(r->nodes[1].first_rank == 2);
  CHECK(r->hostfile_path == "hf");
  GenerationInfo gen;
  EnvList env = WorkerEnv(*r, 1, 1, gen, {});
  auto get = [&](const std::string& k) {
    for (const auto& kv : env)
      if (kv.first == k) return kv.second;
    return std::string("<unset>");
  };
  CHECK(get("RANK") == "3");
  CHECK(get("WORLD_SIZE") == "4");
  CHECK(get("GROUP_RANK") == "1");
  CHECK(get("GROUP_WORLD_SIZE") == "2");
}

TEST_CASE("PlanOnReachable: node 0 down moves the master to the next host", "[unit]") {
  auto r = PlanOnReachable(Plan("a slots=1\nb slots=3\nc slots=2\n", 1, true), {false, true, true});
  REQUIRE(r.ok());
  REQUIRE(r->nodes.size() == 2);
  CHECK(r->nodes[0].host.name == "b");
  CHECK(r->nodes[1].first_rank == 3);
  CHECK(r->world_size == 5);
}

TEST_CASE("PlanOnReachable: all reachable is the same plan", "[unit]") {
  LaunchPlan p = Plan(kThree, 2, true);
  auto r = PlanOnReachable(p, {true, true, true});
  REQUIRE(r.ok());
  REQUIRE(r->nodes.size() == 3);
  CHECK(r->world_size == p.world_size);
  for (size_t i = 0; i < 3; ++i) CHECK(r->nodes[i].first_rank == p.nodes[i].first_rank);
}

TEST_CASE("PlanOnReachable: fewer than min_nodes is an error naming the counts", "[unit]") {
  auto r = PlanOnReachable(Plan(kThree, 2, true), {false, false, true});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "1 of 3 hosts reachable, elastic.min_nodes is 2");
  CHECK_FALSE(PlanOnReachable(Plan(kThree, 1, true), {false, false, false}).ok());
}

TEST_CASE("PlanOnReachable: standbys stay standbys", "[unit]") {
  LaunchPlan p = Plan("a slots=1\nb slots=1\nc slots=1\nd slots=1\n", 1, true, 3);
  REQUIRE(p.standbys.size() == 1);
  auto r = PlanOnReachable(p, {true, false, true});
  REQUIRE(r.ok());
  CHECK(r->nodes.size() == 2);
  REQUIRE(r->standbys.size() == 1);
  CHECK(r->standbys[0].host.name == "d");
  CHECK(r->standbys[0].node_rank == -1);
}

TEST_CASE("SshOptionsForJob: command line > job file > DSLAUNCH_* defaults", "[unit]") {
  CliOptions cli;
  JobSpec job;
  auto base = SshOptionsForJob(job, cli);
  REQUIRE(base.ok());
  CHECK(base->host_key_policy == HostKeyPolicy::kAcceptNew);  // unless DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING
  CHECK_FALSE(base->default_port.has_value());

  job.ssh.strict_host_key_checking = "yes";
  job.ssh.connect_timeout = 4.0;
  job.ssh.port = 2200;
  auto fromjob = SshOptionsForJob(job, cli);
  REQUIRE(fromjob.ok());
  CHECK(fromjob->host_key_policy == HostKeyPolicy::kYes);
  CHECK(fromjob->connect_timeout == 4.0);
  CHECK(*fromjob->default_port == 2200);

  cli.connect_timeout = 7.0;
  cli.connect_timeout_set = true;
  cli.ssh_port = 2300;
  cli.fanout = 5;
  auto fromcli = SshOptionsForJob(job, cli);
  REQUIRE(fromcli.ok());
  CHECK(fromcli->connect_timeout == 7.0);
  CHECK(*fromcli->default_port == 2300);
  CHECK(fromcli->fanout == 5);
  CHECK(fromcli->host_key_policy == HostKeyPolicy::kYes);

  job.ssh.strict_host_key_checking = "maybe";  // the parser never lets this through
  CHECK_FALSE(SshOptionsForJob(job, cli).ok());
}

}  // namespace
}  // namespace ds
