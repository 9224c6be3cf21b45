#include "launcher/config/plan.h"

#include <catch2/catch.hpp>

#include "launcher/config/job_spec.h"

namespace ds {
namespace {

std::vector<SelectedHost> Hosts(const std::string& text, const SelectionOptions& sel = {}) {
  auto hf = ParseHostfile(text, "hf");
  REQUIRE(hf.ok());
  auto r = SelectHosts(*hf, sel);
  REQUIRE(r.ok());
  return *r;
}

JobSpec Job() {
  JobSpec j;
  j.command = {"python3", "-u", "train.py"};
  return j;
}

LaunchPlan ElasticPlan(const std::string& hostfile, int min_nodes, bool min_set, int max_nodes = 0) {
  JobSpec job = Job();
  job.elastic.min_nodes = min_nodes;
  job.elastic.min_nodes_set = min_set;
  job.elastic.max_nodes = max_nodes;
  auto p = MakePlan(Hosts(hostfile), job, false);
  REQUIRE(p.ok());
  p->hostfile_path = "hf";
  return *p;
}

const char* kThree = "n0 slots=2\nn1 slots=2\nn2 slots=2\n";

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

TEST_CASE("plan: uneven slot counts") {
  auto plan = MakePlan(Hosts("a slots=3\nb slots=1\nc slots=2\n"), Job(), false);
  REQUIRE(plan.ok());
  CHECK(plan->world_size == 6);
  REQUIRE(plan->nodes.size() == 3);
  CHECK(plan->nodes[0].node_rank == 0);
  CHECK(plan->nodes[0].first_rank == 0);
  CHECK(plan->nodes[0].num_workers() == 3);
  CHECK(plan->nodes[1].node_rank == 1);
  CHECK(plan->nodes[1].first_rank == 3);
  CHECK(plan->nodes[1].num_workers() == 1);
  CHECK(plan->nodes[2].first_rank == 4);
  CHECK(plan->nodes[2].slots == std::vector<int>{0, 1});
  CHECK(plan->standbys.empty());

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

TEST_CASE("plan: env is deterministic and ranks are a permutation") {
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

TEST_CASE("plan: master address falls back to network.master_addr, then node rank 0") {
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

TEST_CASE("plan: procs_per_node and its errors") {
  JobSpec j = Job();
  j.procs_per_node = 2;
  auto plan = MakePlan(Hosts("a slots=4\nb slots=2\n"), j, false);
  REQUIRE(plan.ok());
  CHECK(plan->world_size == 4);
  CHECK(plan->nodes[0].slots == std::vector<int>{0, 1});
  j.procs_per_node = 3;
  auto bad = MakePlan(Hosts("a slots=4\nb slots=2\n"), j, false);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "procs_per_node is 3 but host 'b' (hostfile line 2) has 2 selected slot(s)");
}

TEST_CASE("plan: procs_per_node over a host's slots names the job file's line and the host's") {
  auto job = ParseJobFile("command: [x]\nprocs_per_node: 2\n", "train.yaml");
  REQUIRE(job.ok());
  CHECK(job->procs_per_node_at == "train.yaml:2:17");
  auto bad = MakePlan(Hosts("a slots=2\nb slots=1\n"), *job, false);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "train.yaml:2:17: procs_per_node is 2 but host 'b' (hostfile line 2) has 1 selected slot(s)");
}

TEST_CASE("plan: bind_core_list is checked at plan time, naming the value and the expected form") {
  JobSpec j = Job();
  j.bind_cores = true;
  j.core_list = "0-3,8-11";
  CHECK(MakePlan(Hosts("a slots=4\n"), j, false).ok());
  j.core_list = "3-1";
  CHECK(MakePlan(Hosts("a slots=1\n"), j, false).status().message() ==
        "bind_core_list '3-1': '3-1': a range must not end below its start; expected a list like 0-3,8-11");
  j.core_list = "x";
  CHECK(MakePlan(Hosts("a slots=1\n"), j, false).status().message() ==
        "bind_core_list 'x': 'x': expected a CPU number or a range A-B; expected a list like 0-3,8-11");
  j.core_list = "0-1";
  CHECK(MakePlan(Hosts("a slots=2\nb slots=3\n"), j, false).status().message() ==
        "bind_core_list '0-1' has 2 cores for the 3 workers of host 'b': each worker needs at least one core");
}

TEST_CASE("plan: elastic max_nodes makes standbys; min_nodes is checked") {
  JobSpec j = Job();
  j.elastic.max_nodes = 2;
  auto plan = MakePlan(Hosts("a slots=1\nb slots=2\nc slots=1\n"), j, false);
  REQUIRE(plan.ok());
  CHECK(plan->nodes.size() == 2);
  CHECK(plan->world_size == 3);
  REQUIRE(plan->standbys.size() == 1);
  CHECK(plan->standbys[0].host.name == "c");
  CHECK(plan->standbys[0].node_rank == -1);
  j.elastic.min_nodes = 4;
  j.elastic.max_nodes = 0;
  auto bad = MakePlan(Hosts("a slots=1\nb slots=2\nc slots=1\n"), j, false);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "elastic.min_nodes is 4 but only 3 host(s) are selected");
  CHECK(MakePlan({}, Job(), false).status().message() == "no hosts selected");
}

TEST_CASE("plan: CUDA_VISIBLE_DEVICES only with GPUs, the node's selected slots") {
  auto hosts = Hosts("a slots=4\n", {.include = "a:1,3"});
  auto gpu = MakePlan(hosts, Job(), true);
  REQUIRE(gpu.ok());
  CHECK(Get(WorkerEnv(*gpu, 0, 1, {}, {}), "CUDA_VISIBLE_DEVICES") == "1,3");
  auto cpu = MakePlan(hosts, Job(), false);
  CHECK(Get(WorkerEnv(*cpu, 0, 1, {}, {}), "CUDA_VISIBLE_DEVICES") == "<unset>");
}

TEST_CASE("plan: OMP_NUM_THREADS unless the user set it") {
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

TEST_CASE("plan: socket interface precedence") {
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

TEST_CASE("plan: DSLAUNCH_* from the generation and the job; user env last") {
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

// --- PlanOnNodes (elastic start and restart) ---

TEST_CASE("PlanOnNodes: a middle host down, ranks dense in hostfile order", "[unit]") {
  auto r = PlanOnNodes(ElasticPlan(kThree, 2, true), {true, false, true});
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
  KeyValues env = WorkerEnv(*r, 1, 1, gen, {});
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

TEST_CASE("PlanOnNodes: node 0 down moves the master to the next host", "[unit]") {
  auto r = PlanOnNodes(ElasticPlan("a slots=1\nb slots=3\nc slots=2\n", 1, true), {false, true, true});
  REQUIRE(r.ok());
  REQUIRE(r->nodes.size() == 2);
  CHECK(r->nodes[0].host.name == "b");
  CHECK(r->nodes[1].first_rank == 3);
  CHECK(r->world_size == 5);
}

TEST_CASE("PlanOnNodes: keeping every node is the same plan", "[unit]") {
  LaunchPlan p = ElasticPlan(kThree, 2, true);
  auto r = PlanOnNodes(p, {true, true, true});
  REQUIRE(r.ok());
  REQUIRE(r->nodes.size() == 3);
  CHECK(r->world_size == p.world_size);
  for (size_t i = 0; i < 3; ++i) CHECK(r->nodes[i].first_rank == p.nodes[i].first_rank);
}

TEST_CASE("PlanOnNodes: fewer than min_nodes is an error naming the counts", "[unit]") {
  auto r = PlanOnNodes(ElasticPlan(kThree, 2, true), {false, false, true});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "1 of 3 hosts reachable, elastic.min_nodes is 2");
  CHECK_FALSE(PlanOnNodes(ElasticPlan(kThree, 1, true), {false, false, false}).ok());
}

TEST_CASE("PlanOnNodes: a standby steps in for a lost node; with none lost it stays one", "[unit]") {
  LaunchPlan p = ElasticPlan("a slots=1\nb slots=1\nc slots=2\nd slots=1\ne slots=1\n", 1, true, 3);
  REQUIRE(p.standbys.size() == 2);
  REQUIRE(Candidates(p).size() == 5);
  CHECK(Candidates(p)[3].host.name == "d");
  auto r = PlanOnNodes(p, {true, false, true, true, true});
  REQUIRE(r.ok());
  REQUIRE(r->nodes.size() == 3);
  CHECK(r->nodes[1].host.name == "c");
  CHECK(r->nodes[2].host.name == "d");
  CHECK(r->nodes[2].node_rank == 2);
  CHECK(r->nodes[2].first_rank == 3);
  CHECK(r->world_size == 4);
  REQUIRE(r->standbys.size() == 1);
  CHECK(r->standbys[0].host.name == "e");
  CHECK(r->standbys[0].node_rank == -1);

  auto same = PlanOnNodes(p, {true, true, true, true, true});
  REQUIRE(same.ok());
  CHECK(same->nodes.size() == 3);
  CHECK(same->standbys.size() == 2);
  CHECK(same->world_size == p.world_size);
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST_CASE("plan: torchrun's whole worker contract") {
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
