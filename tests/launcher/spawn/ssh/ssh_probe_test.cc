// ElasticStartAllowed (pure) and SshOptionsForJob's
// precedence. ProbeNodes needs real sshds: tests/cluster/elastic_start_test.sh.
#include "launcher/spawn/ssh/ssh_probe.h"

#include <catch2/catch.hpp>

#include "launcher/cmd/spawner_choice.h"

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
