#include "launcher/spawn/slurm/srun_spawner.h"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <algorithm>

#include "launcher/spawn/exit_signal.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

TEST_CASE("srun spawner: srun's task and node reports mark that host's agent ended", "[unit]") {
  std::string host;
  int exit = 0;
  CHECK(SrunHostEnded(true, "srun: error: w2: task 1: Exited with exit code 3", &host, &exit));
  CHECK(host == "w2");
  CHECK(exit == 3);
  CHECK(SrunHostEnded(true, "srun: error: w3: task 2: Killed", &host, &exit));
  CHECK(host == "w3");
  CHECK(exit == 137);
  CHECK(SrunHostEnded(true, "srun: error: w0: task 0: Segmentation fault (core dumped)", &host, &exit));
  CHECK(exit == 139);
  CHECK(SrunHostEnded(true, "srun: launch/slurm: _task_finish: w1: task 1: Completed", &host, &exit));
  CHECK(host == "w1");
  CHECK(exit == 0);
  CHECK(SrunHostEnded(true, "srun: error: Node failure on w4", &host, &exit));
  CHECK(host == "w4");
  CHECK(exit == -1);
  CHECK(SrunHostEnded(true, "srun: error: Task launch for StepId=7.0 failed on node w5: Invalid node name specified",
                      &host, &exit));
  CHECK(host == "w5");
  CHECK_FALSE(SrunHostEnded(true, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", &host,
                            &exit));
  CHECK_FALSE(SrunHostEnded(true, "srun: launch/slurm: _task_finish: Received task exit notification for 1 task of "
                                  "StepId=2.0 (status=0x0000).", &host, &exit));
  CHECK_FALSE(SrunHostEnded(false, "srun: error: w2: task 1: Exited with exit code 3", &host, &exit));
}

TEST_CASE("srun spawner: one step for every node, the failure policy by elasticity", "[unit]") {
  std::vector<AgentSpec> specs(2);
  specs[0].host = "w0";
  specs[1].host = "w1";
  SrunOptions o;
  o.extra_args = {"--partition=gpu"};
  const std::vector<std::string> agent = {"/opt/dsagent", "--step-nodes", "0=w0,1=w1"};
  auto argv = SrunArgv(o, specs, agent);
  const std::vector<std::string> head = {"srun", "--verbose", "--job-name=dsagent", "--nodes=2", "--ntasks=2",
                                         "--ntasks-per-node=1", "--nodelist=w0,w1", "--input=all", "--overlap",
                                         "--cpu-bind=none", "--kill-on-bad-exit=1", "--partition=gpu"};
  CHECK(std::vector<std::string>(argv.begin(), argv.begin() + head.size()) == head);
  CHECK(std::vector<std::string>(argv.end() - 3, argv.end()) == agent);
  o.elastic = true;
  argv = SrunArgv(o, specs, agent);
  CHECK(std::find(argv.begin(), argv.end(), "--no-kill") != argv.end());
  CHECK(std::find(argv.begin(), argv.end(), "--kill-on-bad-exit=0") != argv.end());
}

// A stand-in srun: runs the command once per --nodelist node with
// SLURMD_NODENAME set and stdin's first line on each one's stdin (as
// --input=all), and reports failed tasks as srun does.
const char* kFakeSrun = R"(#!/bin/bash
printf '%s\n' "$@" > "$(dirname "$0")/argv"
nodes=
while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do
  case "$1" in --nodelist=*) nodes=${1#--nodelist=};; esac
  shift
done
read -r payload
IFS=, read -ra hosts <<<"$nodes"
pids=()
for h in "${hosts[@]}"; do
  (echo "$payload" | SLURMD_NODENAME=$h "$@") &
  pids+=($!)
done
rc=0
for i in "${!hosts[@]}"; do
  wait "${pids[$i]}"; s=$?
  [ $s -ne 0 ] && { echo "srun: error: ${hosts[$i]}: task $i: Exited with exit code $s" >&2; rc=$s; }
done
exit $rc
)";

// A stand-in agent: records which node it found and its stdin; w1's exits 3
// once `go` exists, the others 0 at once.
const char* kFakeAgent = R"(#!/bin/bash
dir=$(dirname "$0")
read -r token
while [ $# -gt 0 ]; do
  case "$1" in --step-nodes) nodes=$2; shift;; --step-identity) var=$2; shift;; esac
  shift
done
echo "${!var} $token $nodes" > "$dir/seen-${!var}"
if [ "${!var}" = w1 ]; then
  while [ ! -e "$dir/go" ]; do sleep 0.01; done
  exit 3
fi
)";

TEST_CASE("srun spawner: every node's agent gets the token on stdin and its own end", "[process]") {
  testing::TempDir tmp("dsl-test-srun");
  const std::string dir = tmp.path();
  testing::WriteFile(dir + "/srun", kFakeSrun);
  testing::WriteFile(dir + "/agent", kFakeAgent);
  ::chmod((dir + "/srun").c_str(), 0755);
  ::chmod((dir + "/agent").c_str(), 0755);
  std::vector<AgentSpec> specs(3);
  for (int i = 0; i < 3; ++i) {
    specs[i].host = "w" + std::to_string(i);
    specs[i].node_index = i;
    specs[i].argv = {dir + "/agent", "--node-index", std::to_string(i), "--host", specs[i].host};
    specs[i].stdin_payload = "t0ken";
  }
  SrunOptions o;
  o.srun_path = dir + "/srun";
  o.stop_grace = 2.0;
  auto r = SrunSpawner(o).Start(specs);
  REQUIRE(r.size() == 3);
  for (auto& h : r) REQUIRE(h.ok());
  CHECK((*r[1])->Running());
  testing::WriteFile(dir + "/go", "");
  REQUIRE(WaitReadable((*r[1])->exit_fd(), 20));
  CHECK((*r[1])->ExitStatus() == 3);
  REQUIRE(WaitReadable((*r[0])->exit_fd(), 20));
  REQUIRE(WaitReadable((*r[2])->exit_fd(), 20));
  CHECK((*r[0])->ExitStatus() == 0);
  for (int i = 0; i < 3; ++i) {
    CHECK(testing::ReadFile(dir + "/seen-w" + std::to_string(i)) == "w" + std::to_string(i) + " t0ken 0=w0,1=w1,2=w2\n");
  }
  CHECK(testing::ReadFile(dir + "/argv").find("t0ken") == std::string::npos);  // never on the command line
}

TEST_CASE("srun spawner: without srun every node fails with the reason", "[unit]") {
  SrunOptions o;
  o.srun_path = "/nonexistent/srun";
  std::vector<AgentSpec> specs(1);
  specs[0].host = "w0";
  specs[0].argv = {"/a", "--node-index", "0", "--host", "w0"};
  auto r = SrunSpawner(o).Start(specs);
  REQUIRE(r.size() == 1);
  REQUIRE_FALSE(r[0].ok());
  CHECK(r[0].status().message().starts_with("w0: --launcher slurm: srun not found ("));
}

}  // namespace
}  // namespace ds
