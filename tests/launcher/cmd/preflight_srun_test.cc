// `dslaunch check` through srun: the step's command line, the one script for
// every node, srun --label's output told apart by the node each task names
// (not by task order), and rows for nodes that did not answer.
#include "launcher/cmd/preflight_srun.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

Hostfile ThreeNodes() {
  Hostfile h;
  h.path = kSlurmNodelist;
  for (const char* n : {"w1", "w2", "w3"}) h.hosts.push_back(HostEntry{.name = n, .slots = 2});
  return h;
}

PreflightOptions Options() {
  PreflightOptions o;
  o.agent_path = "/usr/bin/dsagent";
  o.master_port = 29500;
  o.local_version = "1.0";
  return o;
}

std::string Probe(const std::string& task, const std::string& node) {
  return task + ": node=" + node + "\n" + task + ": agent=ok dsagent 1.0\n" + task + ": wd=skip\n" + task +
         ": cpus=4\n" + task + ": gpus=0\n";
}

TEST_CASE("check via srun: one labelled task per node, beside other steps", "[unit]") {
  auto argv = SrunProbeArgv("srun", ThreeNodes(), "SCRIPT");
  const std::vector<std::string> want = {"srun", "--job-name=dslaunch-check", "--nodes=3", "--ntasks=3",
                                         "--ntasks-per-node=1", "--nodelist=w1,w2,w3", "--overlap",
                                         "--cpu-bind=none", "--kill-on-bad-exit=0", "--label", "/bin/sh", "-c",
                                         "SCRIPT"};
  CHECK(argv == want);
  const std::string script = SrunProbeScript(Options(), "10.0.0.1");
  CHECK(script.rfind("echo \"node=$SLURMD_NODENAME\"\n", 0) == 0);
  // Only node 0's branch checks the master port.
  const size_t else_at = script.find("\nelse\n");
  REQUIRE(else_at != std::string::npos);
  CHECK(script.find("sport = :29500") < else_at);
  CHECK(script.find("sport = :29500", else_at) == std::string::npos);
}

TEST_CASE("check via srun: outputs go to the node each task named, interleaved or not", "[unit]") {
  // Task 0 ran on w2: srun's task order is not the hostfile's.
  const std::string labelled = "1: node=w1\n0: node=w2\n0: a=1\n1: a=2\n 0: b=3\nnoise without a label\n";
  auto by = ProbeOutputsByNode(labelled);
  REQUIRE(by.size() == 2);
  CHECK(by["w2"] == "a=1\nb=3\n");
  CHECK(by["w1"] == "a=2\n");
}

TEST_CASE("check via srun: rows for every host; silent and failed nodes named", "[unit]") {
  const Hostfile hosts = ThreeNodes();
  std::vector<std::string> seen;
  auto rows = ProbeWithSrun(hosts, Options(), [&](const std::vector<std::string>& argv) -> Result<std::string> {
    seen = argv;
    return Probe("0", "w1") + Probe("1", "w3");
  });
  CHECK(seen.at(0) == "srun");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].ok());
  CHECK(rows[0].ssh.text == "srun, no ssh");
  CHECK(rows[2].ok());
  CHECK_FALSE(rows[1].ok());
  CHECK(rows[1].problems == std::vector<std::string>{"w2: no answer from srun's task on this node"});

  auto failed = ProbeWithSrun(hosts, Options(), [](const std::vector<std::string>&) -> Result<std::string> {
    return Status::IOError("srun: error: Unable to create step for job 7: Requested node configuration is not available");
  });
  REQUIRE(failed.size() == 3);
  for (const auto& r : failed) {
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].find("Unable to create step") != std::string::npos);
  }
}

}  // namespace
}  // namespace ds
