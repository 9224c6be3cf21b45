#include "launcher/config/worker_env.h"

#include <catch2/catch.hpp>

#include "launcher/config/job_spec.h"
#include "tests/launcher/config/plan_inputs.h"

namespace ds {
namespace {

using testing::Hosts;
using testing::Job;
using testing::kThree;

std::string Get(const KeyValues& env, const std::string& name) {
  int n = 0;
  std::string value = "<unset>";
  for (const auto& kv : env)
    if (kv.first == name) {
      value = kv.second;
      ++n;
    }
  CHECK(n <= 1);  // every name appears once
  return value;
}

TEST_CASE("worker env: a worker of a node with uneven slot counts") {
  auto plan = MakePlan(Hosts("a slots=3\nb slots=1\nc slots=2\n"), Job(), false);
  REQUIRE(plan.ok());
  GenerationInfo gen;
  gen.job_id = "j1";
  gen.master_addr = "10.0.0.1";
  gen.master_port = 29555;
  gen.cpus_on_node = 8;
  KeyValues e = WorkerEnv(*plan, 2, 1, gen, {});
  CHECK(Get(e, "RANK") == "5");
  CHECK(Get(e, "LOCAL_RANK") == "1");
  CHECK(Get(e, "WORLD_SIZE") == "6");
  CHECK(Get(e, "LOCAL_WORLD_SIZE") == "2");
  CHECK(Get(e, "GROUP_RANK") == "2");
  CHECK(Get(e, "GROUP_WORLD_SIZE") == "3");
  CHECK(Get(e, "ROLE_RANK") == "5");
  CHECK(Get(e, "ROLE_WORLD_SIZE") == "6");
  CHECK(Get(e, "CROSS_RANK") == "2");
  CHECK(Get(e, "CROSS_SIZE") == "3");
  CHECK(Get(e, "LOCAL_SIZE") == "2");
  CHECK(Get(e, "MASTER_ADDR") == "10.0.0.1");
  CHECK(Get(e, "MASTER_PORT") == "29555");
  CHECK(Get(e, "OMP_NUM_THREADS") == "4");
  CHECK(Get(e, "DSLAUNCH_JOB_ID") == "j1");
  CHECK(Get(e, "DSLAUNCH_HOST") == "c");
  CHECK(Get(e, "DSLAUNCH_GENERATION") == "0");
  CHECK(Get(e, "CUDA_VISIBLE_DEVICES") == "<unset>");
  CHECK(Get(e, "NCCL_SOCKET_IFNAME") == "<unset>");
  CHECK(Get(e, "DSLAUNCH_STORE_ADDR") == "<unset>");
  CHECK(e[0].first == "RANK");  // stable order: the torchrun names first
}

TEST_CASE("worker env: env is deterministic and ranks are a permutation") {
  auto plan = MakePlan(Hosts("a slots=3\nb slots=1\nc slots=2\n"), Job(), false);
  REQUIRE(plan.ok());
  std::vector<int> seen(plan->world_size, 0);
  for (int n = 0; n < 3; ++n)
    for (int l = 0; l < plan->nodes[n].num_workers(); ++l) {
      KeyValues e = WorkerEnv(*plan, n, l, {}, {});
      CHECK(e == WorkerEnv(*plan, n, l, {}, {}));
      ++seen.at(std::stoi(Get(e, "RANK")));
    }
  CHECK(seen == std::vector<int>(6, 1));
}

TEST_CASE("worker env: master address falls back to network.master_addr, then node rank 0") {
  auto hosts = Hosts("a slots=1\nb slots=1\n");
  JobSpec j = Job();
  auto plan = MakePlan(hosts, j, false);
  REQUIRE(plan.ok());
  CHECK(Get(WorkerEnv(*plan, 1, 0, {}, {}), "MASTER_ADDR") == "a");
  CHECK(Get(WorkerEnv(*plan, 1, 0, {}, {}), "MASTER_PORT") == "0");
  j.network.master_addr = "10.9.9.9";
  j.network.master_port = 1234;
  plan = MakePlan(hosts, j, false);
  CHECK(Get(WorkerEnv(*plan, 1, 0, {}, {}), "MASTER_ADDR") == "10.9.9.9");
  CHECK(Get(WorkerEnv(*plan, 1, 0, {}, {}), "MASTER_PORT") == "1234");
}

TEST_CASE("worker env: CUDA_VISIBLE_DEVICES only with GPUs, the node's selected slots") {
  auto hosts = Hosts("a slots=4\n", {.include = "a:1,3"});
  auto gpu = MakePlan(hosts, Job(), true);
  REQUIRE(gpu.ok());
  CHECK(Get(WorkerEnv(*gpu, 0, 1, {}, {}), "CUDA_VISIBLE_DEVICES") == "1,3");
  auto cpu = MakePlan(hosts, Job(), false);
  CHECK(Get(WorkerEnv(*cpu, 0, 1, {}, {}), "CUDA_VISIBLE_DEVICES") == "<unset>");
}

TEST_CASE("worker env: OMP_NUM_THREADS unless the user set it") {
  auto plan = MakePlan(Hosts("a slots=3\n"), Job(), false);
  GenerationInfo gen;
  gen.cpus_on_node = 2;
  CHECK(Get(WorkerEnv(*plan, 0, 0, gen, {}), "OMP_NUM_THREADS") == "1");  // max(1, 2/3)
  gen.cpus_on_node = 0;                                                   // unknown
  CHECK(Get(WorkerEnv(*plan, 0, 0, gen, {}), "OMP_NUM_THREADS") == "1");
  gen.cpus_on_node = 12;
  CHECK(Get(WorkerEnv(*plan, 0, 0, gen, {}), "OMP_NUM_THREADS") == "4");
  CHECK(Get(WorkerEnv(*plan, 0, 0, gen, {{"OMP_NUM_THREADS", "7"}}), "OMP_NUM_THREADS") == "<unset>");
  JobSpec j = Job();
  j.env = {{"OMP_NUM_THREADS", "3"}};
  auto user = MakePlan(Hosts("a slots=3\n"), j, false);
  CHECK(Get(WorkerEnv(*user, 0, 0, gen, {}), "OMP_NUM_THREADS") == "3");
  auto host = MakePlan(Hosts("a slots=3 OMP_NUM_THREADS=5\n"), Job(), false);
  CHECK(Get(WorkerEnv(*host, 0, 0, gen, {}), "OMP_NUM_THREADS") == "5");
}

TEST_CASE("worker env: socket interface precedence") {
  GenerationInfo gen;
  gen.socket_ifname = "detected0";
  const KeyValues inherited = {{"NCCL_SOCKET_IFNAME", "inherited0"}};
  // Detected only.
  auto p = MakePlan(Hosts("a slots=1\n"), Job(), false);
  CHECK(Get(WorkerEnv(*p, 0, 0, gen, {}), "NCCL_SOCKET_IFNAME") == "detected0");
  CHECK(Get(WorkerEnv(*p, 0, 0, gen, {}), "GLOO_SOCKET_IFNAME") == "detected0");
  // Omitted when nothing is known.
  CHECK(Get(WorkerEnv(*p, 0, 0, {}, {}), "GLOO_SOCKET_IFNAME") == "<unset>");
  // Inherited beats detected, per variable.
  KeyValues e = WorkerEnv(*p, 0, 0, gen, inherited);
  CHECK(Get(e, "NCCL_SOCKET_IFNAME") == "inherited0");
  CHECK(Get(e, "GLOO_SOCKET_IFNAME") == "detected0");
  // Job env beats inherited.
  JobSpec j = Job();
  j.env = {{"NCCL_SOCKET_IFNAME", "job0"}};
  auto pj = MakePlan(Hosts("a slots=1\n"), j, false);
  CHECK(Get(WorkerEnv(*pj, 0, 0, gen, inherited), "NCCL_SOCKET_IFNAME") == "job0");
  // The hostfile's per-host key beats the job env.
  auto ph = MakePlan(Hosts("a slots=1 NCCL_SOCKET_IFNAME=host0\n"), j, false);
  CHECK(Get(WorkerEnv(*ph, 0, 0, gen, inherited), "NCCL_SOCKET_IFNAME") == "host0");
  // network.interface beats everything, for both variables.
  j.network.interface = "net0";
  auto pn = MakePlan(Hosts("a slots=1 NCCL_SOCKET_IFNAME=host0\n"), j, false);
  e = WorkerEnv(*pn, 0, 0, gen, inherited);
  CHECK(Get(e, "NCCL_SOCKET_IFNAME") == "net0");
  CHECK(Get(e, "GLOO_SOCKET_IFNAME") == "net0");
}

TEST_CASE("worker env: DSLAUNCH_* from the generation and the job; user env last") {
  JobSpec j = Job();
  j.checkpoint.dir = "/ckpt";
  j.env = {{"B", "1"}, {"A", "2"}};
  auto p = MakePlan(Hosts("a slots=1 C=3 A=host\n"), j, false);
  GenerationInfo gen;
  gen.job_id = "job";
  gen.generation = 3;
  gen.restart_count = 2;
  gen.store_addr = "10.0.0.1:4000";
  gen.store_token = "tok";
  gen.heartbeat_addr = "127.0.0.1:5000";
  KeyValues e = WorkerEnv(*p, 0, 0, gen, {});
  CHECK(Get(e, "DSLAUNCH_GENERATION") == "3");
  CHECK(Get(e, "DSLAUNCH_RESTART_COUNT") == "2");
  CHECK(Get(e, "DSLAUNCH_STORE_ADDR") == "10.0.0.1:4000");
  CHECK(Get(e, "DSLAUNCH_STORE_TOKEN") == "tok");
  CHECK(Get(e, "DSLAUNCH_HEARTBEAT_ADDR") == "127.0.0.1:5000");
  CHECK(Get(e, "DSLAUNCH_CHECKPOINT_DIR") == "/ckpt");
  CHECK(Get(e, "DSLAUNCH_TRAINER_CONFIG") == "<unset>");
  CHECK(Get(e, "A") == "host");  // the per-host key is more specific than the job's env
  REQUIRE(e.size() >= 3);
  CHECK(e[e.size() - 3].first == "B");  // job env order kept, then the host's keys
  CHECK(e[e.size() - 1].first == "C");
}

TEST_CASE("worker env: torchrun's whole worker contract") {
  JobSpec job;
  job.command = {"python3", "train.py"};
  job.elastic.max_restarts = 3;
  auto p = MakePlan(Hosts(kThree), job, false);
  REQUIRE(p.ok());
  GenerationInfo gen;
  gen.job_id = "job-42";
  gen.restart_count = 2;
  KeyValues env = WorkerEnv(*p, 1, 0, gen, {});
  CHECK(Get(env, "ROLE_NAME") == "default");
  CHECK(Get(env, "TORCHELASTIC_RUN_ID") == "job-42");
  CHECK(Get(env, "TORCHELASTIC_RESTART_COUNT") == "2");
  CHECK(Get(env, "TORCHELASTIC_MAX_RESTARTS") == "3");
  CHECK(Get(env, "TORCHELASTIC_USE_AGENT_STORE") == "False");
  CHECK(Get(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  // Unless the user set it: job env:, the hostfile, or what the worker inherits.
  CHECK(Get(WorkerEnv(*p, 1, 0, gen, {{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}}),
            "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "<unset>");
  p->job.env = {{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}};
  CHECK(Get(WorkerEnv(*p, 1, 0, gen, {}), "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "3");
  CHECK(IsUserSettableEnv("TORCH_NCCL_ASYNC_ERROR_HANDLING"));
  // The older name too (torch < 2.2 reads only it), set and overridden the same way.
  CHECK(Get(WorkerEnv(*p, 1, 0, gen, {}), "NCCL_ASYNC_ERROR_HANDLING") == "1");
  CHECK(Get(WorkerEnv(*p, 1, 0, gen, {{"NCCL_ASYNC_ERROR_HANDLING", "0"}}), "NCCL_ASYNC_ERROR_HANDLING") == "<unset>");
  CHECK(IsUserSettableEnv("NCCL_ASYNC_ERROR_HANDLING"));
  for (const char* owned : {"ROLE_NAME", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
                            "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE"})
    CHECK_FALSE(IsUserSettableEnv(owned));
}

}  // namespace
}  // namespace ds
