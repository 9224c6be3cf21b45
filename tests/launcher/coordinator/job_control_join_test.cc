// JobControl with ranks given at join and --nnodes MIN:MAX (options.
// start_nodes, job_control_join.cc): the first generation waits for MIN and
// the last call, or starts at once with MAX; a node joining later restarts
// the job bigger within max_restarts; fewer than MIN by the join timeout
// names how many joined and from where. Fake agents, clock and timer.
#include <catch2/catch.hpp>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds::test {
namespace {

using wire::MsgType;

const char* kThreeNodes = "node0 slots=1\nnode1 slots=1\nnode2 slots=1\n";

JobSpec Elastic(int max_restarts, int min_nodes) {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_restarts = max_restarts;
  job.elastic.min_nodes = min_nodes;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  return job;
}

CoordinatorOptions Joined(int start_nodes, double last_call) {
  CoordinatorOptions o;
  o.hosts_from_agents = true;
  o.start_nodes = start_nodes;
  o.last_call = last_call;
  o.register_timeout = 600;
  return o;
}

bool HasNotice(const FakeCluster& c, const std::string& text) {
  for (const auto& n : c.notices())
    if (n.find(text) != std::string::npos) return true;
  return false;
}

TEST_CASE("join: MIN nodes start after the last call; a later node restarts the job bigger", "[jobcontrol]") {
  FakeCluster c(kThreeNodes, Elastic(3, 2), Joined(2, 5.0));
  c.Register(0);
  c.Advance(100);  // one node is not MIN: no last call runs
  c.Register(1);
  c.Advance(4.9);
  CHECK(c.Count(0, MsgType::kReserve) == 0);
  c.Advance(0.2);
  REQUIRE(c.Count(0, MsgType::kReserve) == 1);
  CHECK(HasNotice(c, "starting on 2 of at most 3 nodes (--nnodes 2:3, last call 5 s over), world size 2"));
  c.Reserve();
  c.StartWorkers();
  CHECK(c.NodesRunning() == std::vector<int>{0, 1});

  c.Register(2);
  CHECK(c.control().state() == CoordState::kStopping);
  c.ConfirmStops();
  c.Reserve();
  CHECK(c.NodesRunning() == std::vector<int>{0, 1, 2});
  CHECK(c.control().world_size() == 3);
  CHECK(HasNotice(c, "restart 1/3: generation 1 on 3 nodes, world size 3, after machine-node2 joined"));
}

TEST_CASE("join: MAX nodes start at once, without the last call", "[jobcontrol]") {
  FakeCluster c(kThreeNodes, Elastic(3, 2), Joined(2, 30.0));
  c.RegisterAll();
  CHECK(c.Count(0, MsgType::kReserve) == 1);
}

TEST_CASE("join: with no restart left a late node waits, the job goes on", "[jobcontrol]") {
  FakeCluster c(kThreeNodes, Elastic(0, 2), Joined(2, 1.0));
  c.Register(0);
  c.Register(1);
  c.Advance(1.5);
  c.Reserve();
  c.StartWorkers();
  c.Register(2);
  CHECK(c.control().state() == CoordState::kRunning);
  CHECK(HasNotice(c, "machine-node2 joined, but 0 restarts of 0 are left (--max-restarts): it waits until the job "
                     "ends"));
}

TEST_CASE("join: fewer than MIN by the join timeout fails naming who joined, from where", "[jobcontrol]") {
  FakeCluster c(kThreeNodes, Elastic(3, 2), Joined(2, 5.0));
  c.Register(0);
  c.Advance(601);
  CHECK(c.done());
  REQUIRE(c.record().first_failure());
  CHECK(c.record().first_failure()->what ==
        "1 of the 2 nodes needed joined within 600 s: machine-node0 (10.0.0.1)");
}

}  // namespace
}  // namespace ds::test
