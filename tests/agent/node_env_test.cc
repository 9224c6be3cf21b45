// What the node adds to a worker's environment (agent/node_env.h): the
// coordinator's values over the agent's own, the node's over both where
// only the node knows them, the interface only where nobody chose one, the
// package after the user's PYTHONPATH, and nothing secret or stale inherited.
#include "agent/node_env.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

std::string Get(const KeyValues& env, const std::string& name) {
  std::string value = "<unset>";
  int n = 0;
  for (const auto& [k, v] : env)
    if (k == name) value = v, ++n;
  CHECK(n <= 1);  // every name once
  return value;
}

NodeEnvInputs Inputs() {
  NodeEnvInputs in;
  in.inherited = {{"HOME", "/home/u"}, {"MASTER_PORT", "1"}, {"DSLAUNCH_SECRET_FD", "5"},
                  {"TORCHELASTIC_ERROR_FILE", "/tmp/someone-elses"}, {"SLURM_STEP_ID", "3"}};
  in.assigned = {{"RANK", "0"}, {"MASTER_PORT", "29500"}, {"PYTHONPATH", "/work"}};
  in.heartbeat_token = "tok";
  return in;
}

TEST_CASE("node env: the coordinator's values over the agent's; the secret's descriptor never inherited", "[agent]") {
  const KeyValues env = NodeWorkerEnv(Inputs());
  CHECK(Get(env, "HOME") == "/home/u");
  CHECK(Get(env, "MASTER_PORT") == "29500");
  CHECK(Get(env, "RANK") == "0");
  CHECK(Get(env, "DSLAUNCH_HEARTBEAT_TOKEN") == "tok");
  CHECK(Get(env, "DSLAUNCH_SECRET_FD") == "<unset>");
  CHECK(Get(env, "TORCHELASTIC_ERROR_FILE") == "<unset>");  // ours or none
  CHECK(Get(env, "SLURM_STEP_ID") == "3");                   // not an srun step's agent
  CHECK(Get(env, "DSLAUNCH_SNAPSHOT_DIR") == "<unset>");
  CHECK(Get(env, "NCCL_SOCKET_IFNAME") == "<unset>");
  CHECK(env.front().first == "HOME");  // first-set order
}

TEST_CASE("node env: what only the node knows wins", "[agent]") {
  NodeEnvInputs in = Inputs();
  in.drop_step_variables = true;
  in.snapshot_dir = "/run/snap";
  in.error_file = "/run/err-0.json";
  in.omp_threads = 3;
  in.rank0_store_port = 41000;
  in.python_dir = "/usr/lib/dslaunch/python";
  const KeyValues env = NodeWorkerEnv(in);
  CHECK(Get(env, "SLURM_STEP_ID") == "<unset>");
  CHECK(Get(env, "DSLAUNCH_SNAPSHOT_DIR") == "/run/snap");
  CHECK(Get(env, "TORCHELASTIC_ERROR_FILE") == "/run/err-0.json");
  CHECK(Get(env, "OMP_NUM_THREADS") == "3");
  CHECK(Get(env, "MASTER_PORT") == "41000");  // rank 0 behind the relay
  CHECK(Get(env, "PYTHONPATH") == "/work:/usr/lib/dslaunch/python");  // after the user's
}

TEST_CASE("node env: the detected interface only where nobody chose one, per variable", "[agent]") {
  NodeEnvInputs in = Inputs();
  in.ifname = "eth1";
  CHECK(Get(NodeWorkerEnv(in), "GLOO_SOCKET_IFNAME") == "eth1");
  in.assigned.emplace_back("NCCL_SOCKET_IFNAME", "ib0");
  const KeyValues env = NodeWorkerEnv(in);
  CHECK(Get(env, "NCCL_SOCKET_IFNAME") == "ib0");
  CHECK(Get(env, "GLOO_SOCKET_IFNAME") == "eth1");
  in.ifname.clear();
  in.inherited.emplace_back("GLOO_SOCKET_IFNAME", "lo");
  CHECK(Get(NodeWorkerEnv(in), "GLOO_SOCKET_IFNAME") == "lo");
}

}  // namespace
}  // namespace ds
