#include "launcher/coordinator/assign_builder.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

const std::string* Find(const KeyValues& env, const std::string& k) {
  for (const auto& [key, v] : env)
    if (key == k) return &v;
  return nullptr;
}

LaunchPlan TwoNodePlan() {
  LaunchPlan p;
  p.job.command = {"python3", "train.py"};
  p.job.env = {{"TRICKY", "a \"b\" $c"}};
  for (int i = 0; i < 2; ++i) {
    NodePlan n;
    n.host.name = "w" + std::to_string(i);
    n.node_rank = i;
    n.first_rank = 2 * i;
    n.slots = {0, 1};
    p.nodes.push_back(n);
  }
  p.world_size = 4;
  return p;
}

TEST_CASE("assign: per-worker env from the plan, node facts, interface left to the agent", "[assign]") {
  LaunchPlan plan = TwoNodePlan();
  msg::Register facts;
  facts.cpus = 8;
  facts.heartbeat_addr = "10.0.0.2:5000";
  AssignContext ctx;
  ctx.gen.job_id = "j";
  ctx.gen.master_addr = "10.0.0.1";
  ctx.gen.master_port = 29500;
  ctx.gen.store_addr = "10.0.0.9:4000";
  ctx.gen.store_token = "tok";
  ctx.argv = plan.job.command;
  ctx.stop_grace = 0.5;
  msg::Assign a = BuildAssign(plan, 1, facts, ctx);
  CHECK(a.argv == plan.job.command);
  CHECK(a.master_addr == "10.0.0.1");
  CHECK(a.stop_grace_ms == 500);
  REQUIRE(a.workers.size() == 2);
  CHECK(a.workers[1].rank == 3);
  CHECK(a.workers[1].local_rank == 1);
  const KeyValues& env = a.workers[1].env;
  CHECK(*Find(env, "RANK") == "3");
  CHECK(*Find(env, "GROUP_RANK") == "1");
  CHECK(*Find(env, "MASTER_PORT") == "29500");
  CHECK(*Find(env, "DSLAUNCH_HEARTBEAT_ADDR") == "10.0.0.2:5000");
  CHECK(*Find(env, "OMP_NUM_THREADS") == "4");
  CHECK(*Find(env, "TRICKY") == "a \"b\" $c");
  CHECK(Find(env, "NCCL_SOCKET_IFNAME") == nullptr);  // the agent fills it in
}

TEST_CASE("assign: an interface the agent's environment already sets is kept", "[assign]") {
  LaunchPlan plan = TwoNodePlan();
  msg::Register facts;
  facts.env = {{"NCCL_SOCKET_IFNAME", "ib0"}};
  msg::Assign a = BuildAssign(plan, 0, facts, AssignContext{});
  CHECK(*Find(a.workers[0].env, "NCCL_SOCKET_IFNAME") == "ib0");
}

TEST_CASE("assign: DeepSpeed's per-worker options travel as flags; OMP_NUM_THREADS follows the cores "
          "unless someone set it", "[assign]") {
  LaunchPlan plan = TwoNodePlan();
  msg::Assign a = BuildAssign(plan, 0, msg::Register{}, AssignContext{});
  CHECK(a.local_rank_arg == 0);
  CHECK(a.bind_cores == 0);
  CHECK(a.omp_from_binding == 0);
  plan.job.local_rank_arg = true;
  plan.job.bind_cores = true;
  plan.job.core_list = "0-3";
  a = BuildAssign(plan, 0, msg::Register{}, AssignContext{});
  CHECK(a.local_rank_arg == 1);
  CHECK(a.bind_cores == 1);
  CHECK(a.core_list == "0-3");
  CHECK(a.omp_from_binding == 1);
  CHECK(a.argv == AssignContext{}.argv);  // --local_rank=N is the agent's to add, per worker
  msg::Register facts;
  facts.env = {{"OMP_NUM_THREADS", "8"}};  // the node's own environment chose
  CHECK(BuildAssign(plan, 0, facts, AssignContext{}).omp_from_binding == 0);
  plan.nodes[1].host.env["OMP_NUM_THREADS"] = "2";  // the hostfile chose, for w1 only
  CHECK(BuildAssign(plan, 0, msg::Register{}, AssignContext{}).omp_from_binding == 1);
  CHECK(BuildAssign(plan, 1, msg::Register{}, AssignContext{}).omp_from_binding == 0);
  plan.job.env.emplace_back("OMP_NUM_THREADS", "1");
  CHECK(BuildAssign(plan, 0, msg::Register{}, AssignContext{}).omp_from_binding == 0);
}

TEST_CASE("assign: python: preload travels to every agent; none by default", "[assign]") {
  LaunchPlan plan = TwoNodePlan();
  CHECK(BuildAssign(plan, 0, msg::Register{}, AssignContext{}).preload.empty());
  plan.job.python.preload = {"torch", "numpy"};
  CHECK(BuildAssign(plan, 1, msg::Register{}, AssignContext{}).preload == std::vector<std::string>{"torch", "numpy"});
}

TEST_CASE("assign: trainer jobs run dstrain", "[assign]") {
  JobSpec job;
  job.trainer_yaml = "model: {}";
  CHECK(WorkerArgv(job, "/opt/dslaunch/dstrain") == std::vector<std::string>{"/opt/dslaunch/dstrain"});
  job.trainer_yaml.clear();
  job.command = {"sh", "-c", "true"};
  CHECK(WorkerArgv(job, "x") == job.command);
}

}  // namespace
}  // namespace ds
