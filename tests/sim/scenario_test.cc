// The control plane at 1,024 nodes (label `scale`): simulated agents against
// the real coordinator in its own process, through rendezvous, the store
// bootstrap, a silent agent, a dead agent and the end. Correctness only
// (everyone registered once, every rank given once per generation, the
// silent and the dead node detected and left out, ranks renumbered, the job
// ending 0); bench/scale measures the times.
#include "sim/scenario.h"

#include <catch2/catch.hpp>

#include "sim/sim_fleet.h"

namespace ds::sim {
namespace {

TEST_CASE("scale: 1,024 agents register once, a silent and a dead node are found, ranks renumbered", "[scale]") {
  ScenarioOptions o;
  o.agents = 1024;
  o.heartbeat_interval = 0.2;
  o.heartbeat_timeout = 1.0;
  o.steady_seconds = 0.2;
  o.step_timeout = 40;
  auto r = RunScenario(o);
  REQUIRE(r.ok());
  INFO(ReportText(*r));
  CHECK(r->failures.empty());
  CHECK(r->store_ranks == 1024);
  // Found by its silence: not before heartbeat_timeout (the scenario checks
  // that too), not never.
  CHECK(r->detect_seconds >= 0.95);
  CHECK(r->end.restarts == 2);
  CHECK(r->end.world_size == 1022);
  CHECK(r->end.job_exit_code == 0);
}

// The checks themselves fail on what they are there to catch.
TEST_CASE("scale: the generation checks catch a doubled rank, a gone node and a wrong world size", "[scale]") {
  FleetSeen seen;
  GenerationSeen& g = seen.gens[1];
  g.assigned = 3;
  g.assigned_nodes = {0, 1, 2};
  g.rank_hits = {1, 1, 1};
  g.world_size = 3;
  std::vector<std::string> failures;
  CheckGeneration(seen, 1, 3, 1, {}, failures);
  CHECK(failures.empty());

  g.rank_hits = {1, 2, 0};
  CheckGeneration(seen, 1, 3, 1, {}, failures);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0] == "generation 1: ranks not 0..2 once each (1 missing, 1 given twice, highest 2)");

  failures.clear();
  g.rank_hits = {1, 1, 1};
  g.world_size = -2;
  CheckGeneration(seen, 1, 3, 1, {2}, failures);
  REQUIRE(failures.size() == 2);
  CHECK(failures[0] == "generation 1: node 2 was assigned but is gone");
  CHECK(failures[1] == "generation 1: WORLD_SIZE -2 (-2: differs between workers), expected 3");

  failures.clear();
  CheckGeneration(seen, 2, 3, 1, {}, failures);
  CHECK(failures == std::vector<std::string>{"generation 2: no agent got an Assign"});
}

}  // namespace
}  // namespace ds::sim
