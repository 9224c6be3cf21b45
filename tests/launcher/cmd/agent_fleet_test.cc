// AgentFleet against the FakeSpawner and a coordinator that never listens:
// agents that cannot start or that end before registering fail the job,
// naming the host; each start hands the agents a fresh token, never the job
// secret; at the end the fleet terminates agents that do not exit by
// themselves and stops the io_context. In-process only: no sockets.
#include <catch2/catch.hpp>

#include "launcher/cmd/agent_fleet.h"
#include "launcher/config/hostfile.h"
#include "launcher/config/selection.h"
#include "tests/launcher/spawn/fake_spawner.h"

namespace ds {
namespace {

struct Fleet {
  Fleet() {
    Hostfile hf = ParseHostfile("w0 slots=1\nw1 slots=1\n", "hostfile").value();
    plan = MakePlan(SelectHosts(hf, SelectionOptions{}).value(), JobSpec{}, /*use_gpus=*/false).value();
    CoordinatorOptions o;
    o.job_id = "job";
    o.secret = "the-job-secret";
    o.argv = {"/bin/true"};
    coord = std::make_unique<Coordinator>(io, plan, o, record);
    std::vector<AgentSpec> specs;
    for (int i = 0; i < 2; ++i) {
      AgentSpec s;
      s.host = "w" + std::to_string(i);
      s.node_index = i;
      s.argv = {"dsagent"};
      specs.push_back(s);
    }
    fleet = std::make_unique<AgentFleet>(io, *coord, spawner, specs,
                                         [this](const std::string& text) { notices.push_back(text); });
    coord->OnDone([this] { fleet->Drain(std::chrono::milliseconds(50)); });
    coord->Start();
  }
  // Runs the io_context until the fleet stops it (bounded: never hangs).
  void RunToEnd() { io.run_for(std::chrono::seconds(10)); }

  asio::io_context io;
  LaunchPlan plan;
  JobRecord record;
  FakeSpawner spawner;
  std::unique_ptr<Coordinator> coord;
  std::unique_ptr<AgentFleet> fleet;
  std::vector<std::string> notices;
};

TEST_CASE("agent fleet: every agent gets the same fresh token on stdin, never the job secret", "[fleet]") {
  Fleet f;
  f.fleet->Start();
  REQUIRE(f.spawner.started().size() == 2);
  const std::string token = f.spawner.started()[0].stdin_payload;
  CHECK(token.size() == 64);
  CHECK(token != "the-job-secret");
  CHECK(f.spawner.started()[1].stdin_payload == token);
  CHECK(f.coord->state() == CoordState::kWaitingForAgents);
}

TEST_CASE("agent fleet: a host whose agent cannot start aborts the job, naming it", "[fleet]") {
  Fleet f;
  f.spawner.FailHost("w1", Status::Unavailable("w1: connection refused"));
  f.fleet->Start();
  CHECK(f.coord->state() == CoordState::kDone);
  REQUIRE(f.record.first_failure());
  CHECK(f.record.first_failure()->host == "w1");
  CHECK(f.record.first_failure()->what == "w1: connection refused");
  f.RunToEnd();  // the drain terminates w0's agent, which does not exit by itself
  CHECK(f.spawner.Terminated(0));
}

TEST_CASE("agent fleet: an agent that exits before registering aborts the job", "[fleet]") {
  Fleet f;
  f.fleet->Start();
  f.spawner.End(1, 3);
  f.RunToEnd();
  CHECK(f.coord->state() == CoordState::kDone);
  REQUIRE(f.record.first_failure());
  CHECK(f.record.first_failure()->host == "w1");
  CHECK(f.record.first_failure()->what == "dsagent exited with status 3 before registering");
  CHECK(f.record.ExitCode() == 1);
  CHECK(f.spawner.Terminated(0));
}

TEST_CASE("agent fleet: a lost node's agent does not hold the drain, and is still terminated", "[fleet]") {
  Fleet f;
  f.fleet->Start();
  f.fleet->MarkLost(1);  // its handle still says running (a step launcher that has not noticed)
  f.spawner.End(0, 0);
  f.fleet->Drain(std::chrono::hours(1));
  f.io.run_for(std::chrono::seconds(10));
  CHECK(f.io.stopped());  // at once, not after the hour
  CHECK(f.spawner.Terminated(1));
}

}  // namespace
}  // namespace ds
