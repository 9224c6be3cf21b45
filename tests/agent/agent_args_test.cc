#include <catch2/catch.hpp>

#include "agent/agent_args.h"

namespace ds {
namespace {

TEST_CASE("agent args: the documented command line parses", "[agent]") {
  auto o = ParseAgentArgs({"--coordinator", "10.0.0.1:4000", "--node-index", "2", "--job-id", "abc", "--bind",
                           "127.0.0.3", "--host", "w2", "--heartbeat-timeout", "3s"});
  REQUIRE(o.ok());
  CHECK(o->coordinator == "10.0.0.1:4000");
  CHECK(o->node_index == 2);
  CHECK(o->job_id == "abc");
  CHECK(o->bind_addr == "127.0.0.3");
  CHECK(o->host == "w2");
  CHECK(o->heartbeat_timeout == 3.0);
}

TEST_CASE("agent args: errors name the flag", "[agent]") {
  CHECK(ParseAgentArgs({"--node-index", "x"}).status().message() ==
        "--node-index: expected a non-negative integer, got 'x'");
  CHECK(ParseAgentArgs({"--node-index", "1", "--job-id", "j"}).status().message() == "--coordinator is required");
  CHECK(ParseAgentArgs({"--secret", "oops"}).status().message() == "unknown option '--secret'");
  CHECK(ParseAgentArgs({"--coordinator"}).status().message() == "--coordinator: expected a value");
}

TEST_CASE("agent args: a step's agent finds its node by task rank or node name", "[agent]") {
  AgentOptions o;
  o.step_identity = "OMPI_COMM_WORLD_RANK";
  o.step_nodes = {{0, "w0"}, {3, "w3"}, {5, "w5"}};
  REQUIRE(ResolveStepNode(o, "1").ok());
  CHECK(o.node_index == 3);
  CHECK(o.host == "w3");
  o.step_identity = "SLURMD_NODENAME";
  REQUIRE(ResolveStepNode(o, "w5").ok());
  CHECK(o.node_index == 5);
  CHECK(o.host == "w5");
  CHECK(ResolveStepNode(o, "w9").message() == "--step-identity SLURMD_NODENAME='w9': not one of this step's nodes (3 listed)");
  CHECK(ResolveStepNode(o, "3").message() ==
        "--step-identity SLURMD_NODENAME=3: expected a task rank below 3 (one task per node)");
  CHECK(ResolveStepNode(o, std::nullopt).message().starts_with("--step-identity SLURMD_NODENAME: the variable is not set"));
}

TEST_CASE("agent args: --step-nodes is checked and replaces --node-index", "[agent]") {
  const std::vector<std::string> base = {"--coordinator", "h:1", "--job-id", "j", "--step-identity", "DSL_TEST_UNSET_VAR"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), base.begin(), base.end());
    return ParseAgentArgs(more).status().message();
  };
  CHECK(with({"--step-nodes", "0=a,b"}) == "--step-nodes: expected INDEX=HOST[,INDEX=HOST...], got 'b' in '0=a,b'");
  CHECK(with({"--step-nodes", "0=a", "--node-index", "0"}) ==
        "--step-nodes replaces --node-index and --host: give one or the other");
  CHECK(with({"--step-nodes", "0=a"}).starts_with("--step-identity DSL_TEST_UNSET_VAR: the variable is not set"));
  CHECK(ParseAgentArgs({"--coordinator", "h:1", "--job-id", "j", "--step-nodes", "0=a"}).status().message() ==
        "--step-nodes and --step-identity go together");
}

TEST_CASE("agent args: --tree-parent takes a node index", "[agent]") {
  const std::vector<std::string> base = {"--coordinator", "h:1", "--job-id", "j", "--node-index", "9"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), base.begin(), base.end());
    return ParseAgentArgs(more);
  };
  CHECK(with({}).value().tree_parent == -1);
  CHECK(with({"--tree-parent", "2"}).value().tree_parent == 2);
  CHECK(with({"--tree-parent", "-1"}).status().message() == "--tree-parent: expected a node index, got '-1'");
  CHECK(with({"--tree-parent", "x"}).status().message() == "--tree-parent: expected a node index, got 'x'");
}

TEST_CASE("agent args: the step's per-task variables are told from the job's", "[agent]") {
  for (const char* k : {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID", "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK",
                        "PMI_RANK", "PMIX_NAMESPACE", "SLURM_CPU_BIND_LIST"})
    CHECK(IsStepTaskVariable(k));
  for (const char* k : {"SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NNODES", "SLURM_CONF", "PATH", "RANK"})
    CHECK_FALSE(IsStepTaskVariable(k));
}

}  // namespace
}  // namespace ds
