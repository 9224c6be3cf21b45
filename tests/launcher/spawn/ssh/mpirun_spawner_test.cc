#include "launcher/spawn/ssh/mpirun_spawner.h"

#include <catch2/catch.hpp>

#include <algorithm>

namespace ds {
namespace {

std::vector<AgentSpec> TwoHosts() {
  std::vector<AgentSpec> specs(2);
  for (int i = 0; i < 2; ++i) {
    specs[i].host = "w" + std::to_string(i);
    specs[i].node_index = i;
    specs[i].argv = {"/opt/dsagent", "--node-index", std::to_string(i), "--host", specs[i].host};
    specs[i].stdin_payload = "t";
  }
  return specs;
}

TEST_CASE("mpirun spawner: one process per node, stdin to all, our ssh settings", "[unit]") {
  MpirunOptions o;
  o.mpirun_path = "mpirun";
  o.ssh.config_file = "/etc/my ssh";
  o.ssh.default_port = 2222;
  o.ssh.forward_env = {};
  o.as_root = true;
  o.extra_args = {"--mca", "btl", "^openib"};
  auto argv = MpirunArgv(o, TwoHosts(), {"/opt/dsagent", "--step-identity", "OMPI_COMM_WORLD_RANK"});
  CHECK(argv == std::vector<std::string>{"mpirun", "--host", "w0,w1", "-np", "2", "--map-by", "node", "--bind-to",
                                         "none", "--stdin", "all", "--allow-run-as-root", "--mca", "plm_rsh_args",
                                         "-o BatchMode=yes -F '/etc/my ssh' -p 2222", "--mca",
                                         "orte_abort_on_non_zero_status", "0", "--mca", "btl", "^openib",
                                         "/opt/dsagent", "--step-identity", "OMPI_COMM_WORLD_RANK"});
}

TEST_CASE("mpirun spawner: MPICH's mpiexec, one process per node, our ssh through a wrapper", "[unit]") {
  MpirunOptions o;
  o.flavor = MpiFlavor::kMpich;
  o.mpirun_path = "mpiexec.hydra";
  o.extra_args = {"-localhost", "10.0.0.1"};
  auto argv = MpirunArgv(o, TwoHosts(), {"/opt/dsagent", "--secret-via-pmi", "1"}, "/tmp/x/ssh");
  CHECK(argv == std::vector<std::string>{"mpiexec.hydra", "-hosts", "w0,w1", "-n", "2", "-ppn", "1", "-launcher",
                                         "ssh", "-disable-auto-cleanup", "-launcher-exec", "/tmp/x/ssh", "-localhost", "10.0.0.1",
                                         "/opt/dsagent", "--secret-via-pmi", "1"});
}

TEST_CASE("mpirun spawner: what one mpirun cannot express is refused per host", "[unit]") {
  auto specs = TwoHosts();
  specs[1].user = "bob";
  MpirunOptions o;
  o.mpirun_path = "/bin/true";
  auto r = MpirunSpawner(o).Start(specs);
  REQUIRE(r.size() == 2);
  REQUIRE_FALSE(r[1].ok());
  CHECK(r[1].status().message() ==
        "w1: --launcher openmpi: a hostfile user= cannot be passed to the MPI launcher's ssh; set User in the ssh "
        "config file (DSLAUNCH_SSH_CONFIG) instead");
  o.mpirun_path = "/nonexistent/mpirun";
  r = MpirunSpawner(o).Start(TwoHosts());
  REQUIRE_FALSE(r[0].ok());
  CHECK(r[0].status().message().starts_with("w0: --launcher openmpi: /nonexistent/mpirun not found ("));
}

}  // namespace
}  // namespace ds
