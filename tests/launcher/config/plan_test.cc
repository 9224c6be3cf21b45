#include "launcher/config/plan.h"

#include <catch2/catch.hpp>

#include "launcher/config/job_spec.h"
#include "tests/launcher/config/plan_inputs.h"
#include "launcher/config/worker_env.h"

namespace ds {
namespace {

using testing::Hosts;
using testing::Job;
using testing::kThree;

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

}  // namespace
}  // namespace ds
