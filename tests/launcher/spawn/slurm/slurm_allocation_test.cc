#include "launcher/spawn/slurm/slurm_allocation.h"

#include <catch2/catch.hpp>

#include <map>

namespace ds {
namespace {

// scontrol as a map from its argv (joined by spaces) to its output.
CommandOutput FakeScontrol(std::map<std::string, std::string> answers) {
  return [answers](const std::vector<std::string>& argv) -> Result<std::string> {
    std::string key;
    for (const auto& a : argv) key += (key.empty() ? "" : " ") + a;
    auto it = answers.find(key);
    if (it == answers.end()) return Status::IOError(key + " (exit code 1): unexpected");
    return it->second;
  };
}

const std::map<std::string, std::string> kThreeNodes = {
    {"scontrol show hostnames w[1-2],gpu7", "w1\nw2\ngpu7\n"},
    {"scontrol show node -o w[1-2],gpu7",
     "NodeName=w1 Arch=x86_64 CoresPerSocket=1 NodeAddr=10.0.0.1 NodeHostName=w1 State=ALLOCATED\n"
     "NodeName=w2 Arch=x86_64 NodeAddr=w2 NodeHostName=w2 State=ALLOCATED\n"
     "NodeName=gpu7 NodeAddr=10.0.0.7 State=MIXED\n"}};

TEST_CASE("slurm allocation: Slurm's count lists expand per node", "[unit]") {
  CHECK(*ExpandSlurmCounts("2(x3),1", "V") == std::vector<int>{2, 2, 2, 1});
  CHECK(*ExpandSlurmCounts("4", "V") == std::vector<int>{4});
  CHECK(ExpandSlurmCounts("2(x3", "V").status().message() == "V='2(x3': expected counts such as 2(x3),1");
  CHECK_FALSE(ExpandSlurmCounts("0", "V").ok());
  CHECK_FALSE(ExpandSlurmCounts("", "V").ok());
  CHECK_FALSE(ExpandSlurmCounts("1(x99999999)", "V").ok());
}

TEST_CASE("slurm allocation: nodes, addresses and slots from the allocation", "[unit]") {
  SlurmEnv env{.job_id = "42", .nodelist = "w[1-2],gpu7", .tasks_per_node = "2(x2),1"};
  auto hf = SlurmHostfile(env, FakeScontrol(kThreeNodes));
  REQUIRE(hf.ok());
  CHECK(hf->path == kSlurmNodelist);
  REQUIRE(hf->hosts.size() == 3);
  CHECK(hf->hosts[0].name == "w1");
  CHECK(hf->hosts[0].addr == "10.0.0.1");
  CHECK(hf->hosts[1].addr == "");  // NodeAddr is the name itself
  CHECK(hf->hosts[2].addr == "10.0.0.7");
  CHECK(hf->hosts[0].slots == 2);
  CHECK(hf->hosts[2].slots == 1);
  CHECK(hf->hosts[2].line == 3);

  env.gpus_on_node = "8";  // GPUs beat the task layout
  CHECK(SlurmHostfile(env, FakeScontrol(kThreeNodes))->hosts[2].slots == 8);
  env.ntasks_per_node = "3";  // and --ntasks-per-node beats both
  CHECK(SlurmHostfile(env, FakeScontrol(kThreeNodes))->hosts[0].slots == 3);
}

TEST_CASE("slurm allocation: errors name the variable or the command", "[unit]") {
  CHECK(SlurmHostfile(SlurmEnv{}, FakeScontrol({})).status().message() ==
        "--launcher slurm: SLURM_JOB_NODELIST is not set (and no SLURM_JOB_ID: not inside a Slurm job); run "
        "dslaunch inside an allocation (sbatch or salloc)");
  SlurmEnv env{.job_id = "42", .nodelist = "w[1-2],gpu7", .ntasks_per_node = "x"};
  CHECK(SlurmHostfile(env, FakeScontrol(kThreeNodes)).status().message() ==
        "SLURM_NTASKS_PER_NODE='x': expected a positive integer");
  env = SlurmEnv{.job_id = "42", .nodelist = "w[1-2],gpu7", .tasks_per_node = "2(x2)"};
  CHECK(SlurmHostfile(env, FakeScontrol(kThreeNodes)).status().message() ==
        "SLURM_TASKS_PER_NODE='2(x2)' counts 2 nodes, SLURM_JOB_NODELIST 3");
  env.nodelist = "nope[1]";
  CHECK(SlurmHostfile(env, FakeScontrol(kThreeNodes)).status().message() ==
        "scontrol show hostnames nope[1] (exit code 1): unexpected");
}

TEST_CASE("slurm allocation: the environment's variables are picked out", "[unit]") {
  SlurmEnv s = SlurmEnvFrom({{"SLURM_JOB_ID", "9"}, {"HOME", "/root"}, {"SLURM_JOB_NODELIST", "a[1-2]"},
                             {"SLURM_GPUS_ON_NODE", "4"}});
  CHECK(s.job_id == "9");
  CHECK(s.nodelist == "a[1-2]");
  CHECK(s.gpus_on_node == "4");
  CHECK(s.ntasks_per_node.empty());
}

}  // namespace
}  // namespace ds
