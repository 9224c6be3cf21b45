// RestartPolicy on its own (no agents, no clock: times are made up): the
// job-wide budget, min_nodes, a GPU failure, standbys stepping in, and a host
// sitting out its cooldown unless min_nodes needs it. Each refusal's words.
#include <catch2/catch.hpp>

#include "launcher/config/hostfile.h"
#include "launcher/config/selection.h"
#include "launcher/coordinator/restart_policy.h"

namespace ds {
namespace {

using V = std::vector<int>;
const Clock::time_point kT0{std::chrono::hours(1)};

LaunchPlan PlanFor(const std::string& hostfile, const ElasticOptions& el) {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic = el;
  Hostfile hf = ParseHostfile(hostfile, "hostfile").value();
  return MakePlan(SelectHosts(hf, SelectionOptions{}).value(), job, /*use_gpus=*/false).value();
}

ElasticOptions Elastic(int max_restarts, int min_nodes) {
  ElasticOptions el;
  el.max_restarts = max_restarts;
  el.min_nodes = min_nodes;
  return el;
}

void FailRank(JobRecord& record, int rank, const std::string& host) {
  Failure f;
  f.host = host;
  f.rank = rank;
  f.exit_code = 1;
  record.RecordFailure(std::move(f));
}

struct Policy {
  Policy(const std::string& hostfile, const ElasticOptions& el)
      : plan(PlanFor(hostfile, el)), names(Names(plan)),
        policy(plan, names, [this](const std::string& t) { notices.push_back(t); }) {}
  static std::vector<std::string> Names(const LaunchPlan& plan) {
    std::vector<std::string> out;
    for (const NodePlan& n : Candidates(plan)) out.push_back(n.host.name);
    return out;
  }
  LaunchPlan plan;
  std::vector<std::string> names;
  std::vector<std::string> notices;
  RestartPolicy policy;
  JobRecord record;
};

const char* kThree = "w0 slots=1\nw1 slots=1\nw2 slots=1\n";

TEST_CASE("restart policy: the budget is job-wide; the last restart used says so", "[restart]") {
  Policy p(kThree, Elastic(1, 1));
  const std::vector<bool> all(3, true);
  REQUIRE(p.policy.MayRestart(p.record, all));
  REQUIRE(p.policy.Restart(all, p.record, kT0).ok());
  CHECK(p.policy.restarts() == 1);
  CHECK_FALSE(p.policy.MayRestart(p.record, all));
  CHECK(p.notices == std::vector<std::string>{"not restarting: all 1 restarts used (elastic.max_restarts)"});
}

TEST_CASE("restart policy: below min_nodes, or with no restarts at all, it does not restart", "[restart]") {
  Policy p(kThree, Elastic(3, 2));
  CHECK_FALSE(p.policy.MayRestart(p.record, {true, false, false}));
  CHECK(p.notices == std::vector<std::string>{"not restarting: 1 node left, elastic.min_nodes is 2"});
  Policy none(kThree, Elastic(0, 1));
  CHECK_FALSE(none.policy.MayRestart(none.record, {true, true, true}));
  CHECK(none.notices.empty());
}

TEST_CASE("restart policy: a standby steps in for a lost node, in plan order", "[restart]") {
  ElasticOptions el = Elastic(2, 2);
  el.max_nodes = 2;
  Policy p("w0 slots=1\nw1 slots=1\nw2 slots=1\nw3 slots=1\n", el);
  auto next = p.policy.Restart({true, false, true, true}, p.record, kT0);
  REQUIRE(next.ok());
  CHECK(next->agents == V{0, 2});
  CHECK(next->plan.nodes[1].host.name == "w2");
}

TEST_CASE("restart policy: a host whose workers failed sits out its cooldown unless min_nodes needs it",
          "[restart]") {
  ElasticOptions el = Elastic(3, 2);
  el.max_host_failures = 1;
  el.host_cooldown = 60;
  Policy p(kThree, el);
  FailRank(p.record, 1, "w1");
  auto next = p.policy.Restart({true, true, true}, p.record, kT0);
  REQUIRE(next.ok());
  CHECK(next->agents == V{0, 2});
  REQUIRE(p.notices.size() == 1);
  CHECK(p.notices[0] == "w1 sits out: its workers failed 1 time (elastic.max_host_failures); back in 60 s at the "
                        "earliest (elastic.host_cooldown)");
  next = p.policy.Restart({false, true, true}, JobRecord(), kT0 + std::chrono::seconds(30));
  REQUIRE(next.ok());
  CHECK(next->agents == V{1, 2});  // w0 is gone: min_nodes needs w1
  CHECK(p.notices[1] == "w1 is in its cooldown (30 s left) but elastic.min_nodes needs it");
}

void FailGpu(JobRecord& record, int rank, const std::string& host) {
  record.OnAssigned(rank, rank, host);
  record.OnStarted(rank, 100 + rank);
  record.OnExited(rank, 100 + rank, 4, 0, false, {});
}

LaunchPlan TrainerPlan(const std::string& hostfile, const ElasticOptions& el) {
  LaunchPlan plan = PlanFor(hostfile, el);
  plan.job.trainer_yaml = "model: {layers: [4, 2]}";
  return plan;
}

TEST_CASE("restart policy: a host whose GPU failed sits out the rest of the job, if min_nodes holds without it",
          "[restart]") {
  Policy p(kThree, Elastic(3, 2));
  p.plan = TrainerPlan(kThree, Elastic(3, 2));
  FailGpu(p.record, 1, "w1");
  const std::vector<bool> all(3, true);
  REQUIRE(p.policy.MayRestart(p.record, all));
  auto next = p.policy.Restart(all, p.record, kT0);
  REQUIRE(next.ok());
  CHECK(next->agents == V{0, 2});
  CHECK(p.notices == std::vector<std::string>{"w1 sits out the rest of the job: rank 1 had a GPU failure (dstrain "
                                              "exit 4)"});
  next = p.policy.Restart(all, JobRecord(), kT0);  // later restarts too, w1 alive or not
  REQUIRE(next.ok());
  CHECK(next->agents == V{0, 2});

  Policy few(kThree, Elastic(3, 3));
  few.plan = TrainerPlan(kThree, Elastic(3, 3));
  FailGpu(few.record, 2, "w2");
  CHECK_FALSE(few.policy.MayRestart(few.record, all));
  CHECK(few.notices == std::vector<std::string>{"not restarting: 2 nodes left without w2 (rank 2: a GPU failure), "
                                                "elastic.min_nodes is 3"});
}

}  // namespace
}  // namespace ds
