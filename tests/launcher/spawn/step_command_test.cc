#include "launcher/spawn/step_command.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

AgentSpec Spec(int index, const std::string& host) {
  AgentSpec s;
  s.node_index = index;
  s.host = host;
  s.argv = {"/opt/dsagent", "--coordinator", "10.0.0.1:7", "--node-index", std::to_string(index), "--job-id", "j",
            "--host", host, "--heartbeat-interval", "1000ms"};
  return s;
}

TEST_CASE("step command: one agent command line lists the step's nodes", "[unit]") {
  auto argv = StepAgentArgv({Spec(0, "w0"), Spec(2, "w2")}, "SLURMD_NODENAME");
  REQUIRE(argv.ok());
  CHECK(*argv == std::vector<std::string>{"/opt/dsagent", "--coordinator", "10.0.0.1:7", "--job-id", "j",
                                          "--heartbeat-interval", "1000ms", "--step-nodes", "0=w0,2=w2",
                                          "--step-identity", "SLURMD_NODENAME"});
}

TEST_CASE("step command: agents that differ in more than their node cannot share a step", "[unit]") {
  AgentSpec b = Spec(1, "w1");
  b.argv.insert(b.argv.end(), {"--bind", "127.0.0.2"});
  CHECK(StepAgentArgv({Spec(0, "w0"), b}, "X").status().message() ==
        "w1: its agent command line differs from w0's in more than the node, so one step cannot start both");
  CHECK(StepAgentArgv({Spec(0, "a=b")}, "X").status().message() ==
        "a=b: a host name with ',' or '=' cannot be listed in a step");
  CHECK(StepAgentArgv({}, "X").status().message() == "no agents to start");
}

TEST_CASE("step command: a node list too long for one argument is refused with the limit", "[unit]") {
  std::vector<AgentSpec> specs;
  for (int i = 0; i < 8000; ++i) specs.push_back(Spec(i, "node-" + std::to_string(i) + ".cluster.example"));
  auto r = StepAgentArgv(specs, "X");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().starts_with("8000 nodes do not fit in one step's command line ("));
}

}  // namespace
}  // namespace ds
