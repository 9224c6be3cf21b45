// JobControl's state machine with fake agents, a fake clock and a fake timer
// (fake_cluster.h): failure -> stop -> confirm -> restart decision -> next
// generation, the restart budget, min_nodes, standbys, cooldown, rejoin, an
// agent lost while stopping, two failures at once, and the deadlines.
#include <catch2/catch.hpp>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds::test {
namespace {

using wire::MsgType;

JobSpec Elastic(int max_restarts, int min_nodes = 1) {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_restarts = max_restarts;
  job.elastic.min_nodes = min_nodes;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  return job;
}

const char* kThreeHosts = "w0 slots=2\nw1 slots=2\nw2 slots=2\n";

bool HasNotice(const FakeCluster& c, const std::string& text) {
  for (const auto& n : c.notices())
    if (n.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("job control: Reserve after every agent registered, Assign after Reserved, done when all exit 0",
          "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(0));
  c.Register(0);
  c.Register(1);
  CHECK(c.Count(0, MsgType::kReserve) == 0);
  c.Register(2);
  REQUIRE(c.Count(0, MsgType::kReserve) == 1);
  CHECK(c.control().state() == CoordState::kReserving);
  c.Reserve(29555);
  CHECK(c.control().state() == CoordState::kRunning);
  for (int node = 0; node < 3; ++node) {
    auto a = c.Last<msg::Assign>(node, MsgType::kAssign);
    REQUIRE(a);
    REQUIRE(a->workers.size() == 2);
    CHECK(a->workers[0].rank == 2 * node);
    CHECK(a->master_addr == "10.0.0.1");
  }
  c.StartWorkers();
  for (int rank = 0; rank < 6; ++rank) c.Exit(rank, 0);
  CHECK(c.done());
  CHECK(c.record().ExitCode() == 0);
  for (int node = 0; node < 3; ++node) {
    CHECK(c.Count(node, MsgType::kShutdown) == 1);
    CHECK(c.link(node).closed());
  }
  // Agents leaving once the job is done are not lost.
  for (int node = 0; node < 3; ++node) c.Drop(node);
  for (size_t node = 0; node < 3; ++node) {
    CHECK_FALSE(c.control().NodeLost(node));
    CHECK(c.control().NodeEnded(node));
  }
}

TEST_CASE("job control: a node registering twice is refused", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(0));
  c.Register(0);
  msg::Register again;
  again.node_index = 0;
  Status st = c.control().OnRegister(again, std::make_shared<FakeLink>());
  CHECK(st.message() == "node 0 is already registered");
  msg::Register stranger;
  stranger.node_index = 7;
  CHECK(c.control().OnRegister(stranger, std::make_shared<FakeLink>()).message() ==
        "node index 7 is not in the plan");
}

TEST_CASE("job control: without restarts a failed worker stops every node and decides the exit code",
          "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(0));
  c.Run();
  c.Exit(3, 7);
  CHECK(c.control().state() == CoordState::kStopping);
  for (int node = 0; node < 3; ++node) CHECK(c.Count(node, MsgType::kStop) == 1);
  CHECK_FALSE(c.done());
  c.ConfirmStops();
  CHECK(c.done());
  CHECK(c.record().ExitCode() == 7);
  CHECK(c.control().restarts() == 0);
}

TEST_CASE("job control: the restart budget is job-wide, then the failure ends the job", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2));
  c.Run();
  for (int round = 1; round <= 2; ++round) {
    c.Exit(1, 3);
    c.ConfirmStops();
    CHECK(c.control().restarts() == round);
    CHECK(c.control().generation() == round);
    CHECK(c.control().state() == CoordState::kReserving);
    CHECK(c.control().world_size() == 6);
    c.Reserve();
    c.StartWorkers();
  }
  CHECK(HasNotice(c, "restart 2/2: generation 2 on 3 nodes, world size 6"));
  c.Exit(4, 9);
  c.ConfirmStops();
  CHECK(c.done());
  CHECK(HasNotice(c, "not restarting: all 2 restarts used (elastic.max_restarts)"));
  CHECK(c.record().ExitCode() == 9);
  CHECK(c.record().restart_causes().size() == 2);
}

// A GPU failure (dstrain's exit 4) leaves its host out for the rest of the
// job: the restart runs on the others; a second host's GPU failure ends the
// job (then it follows the job, not a GPU). Before, the first one ended the
// job: "not restarting: rank 3 on w1 had a GPU failure".
TEST_CASE("job control: dstrain's GPU failure (exit 4) restarts without its host; a second host's ends the job",
          "[jobcontrol]") {
  JobSpec trainer = Elastic(3);
  trainer.command.clear();
  trainer.trainer_yaml = "model: {layers: [4, 2]}";
  FakeCluster c(kThreeHosts, trainer);
  c.Run();
  c.Exit(2, 3);  // a peer's communication failure may arrive first
  c.Exit(3, 4);  // the rank whose GPU faulted
  c.ConfirmStops();
  REQUIRE(c.control().state() == CoordState::kReserving);
  CHECK(c.control().restarts() == 1);
  CHECK(HasNotice(c, "w1 sits out the rest of the job: rank 3 had a GPU failure (dstrain exit 4)"));
  c.Reserve();
  CHECK(c.NodesRunning() == std::vector<int>{0, 2});
  c.StartWorkers();
  c.Exit(3, 4);  // now on w2
  c.ConfirmStops();
  CHECK(c.done());
  CHECK(HasNotice(c, "not restarting: GPU failures (dstrain exit 4) on 2 hosts, w1, w2: a fault on more than one "
                     "host follows the job, not a GPU"));
  CHECK(c.record().ExitCode() == 4);

  FakeCluster other(kThreeHosts, Elastic(3));  // a command's exit 4 is any failure: no host is left out
  other.Run();
  other.Exit(3, 4);
  other.ConfirmStops();
  CHECK_FALSE(other.done());
  CHECK(other.control().restarts() == 1);
  other.Reserve();
  CHECK(other.NodesRunning() == std::vector<int>{0, 1, 2});
}

// Stop 52's docker_cluster: a survivor's Gloo connection to the killed host
// closed, it exited 3, and that reached dslaunch before the host's link did.
TEST_CASE("job control: a survivor's lost connection before its peer's host is lost: the host is the cause",
          "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(1, 2));
  c.Run();
  c.Exit(0, 3);  // dstrain: a peer died
  REQUIRE(c.control().state() == CoordState::kStopping);
  c.Drop(1);
  c.ConfirmStops();
  REQUIRE(c.control().state() == CoordState::kReserving);
  CHECK(HasNotice(c, "restart 1/1: generation 1 on 2 nodes, world size 4, after host w1: agent lost: "
                     "connection reset by peer"));

  FakeCluster own(kThreeHosts, Elastic(1, 2));  // a rank that failed for its own reason stays the cause
  own.Run();
  own.Exit(0, 1);
  own.Drop(1);
  own.ConfirmStops();
  CHECK(HasNotice(own, "restart 1/1: generation 1 on 2 nodes, world size 4, after host w0, rank 0, pid "));
}

TEST_CASE("job control: a lost node restarts on the survivors with fewer ranks, renumbered", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(1, 2));
  c.Run();
  c.Drop(1);
  CHECK(c.lost_events() == std::vector<int>{1});
  CHECK(c.control().state() == CoordState::kStopping);
  c.ConfirmStops();
  REQUIRE(c.control().state() == CoordState::kReserving);
  CHECK(c.control().world_size() == 4);
  CHECK(HasNotice(c, "restart 1/1: generation 1 on 2 nodes, world size 4, after host w1: agent lost: "
                     "connection reset by peer"));
  c.Reserve();
  CHECK(c.NodesRunning() == std::vector<int>{0, 2});
  auto a = c.Last<msg::Assign>(2, MsgType::kAssign);
  CHECK(a->workers[0].rank == 2);  // node 2 is node rank 1 now
  c.StartWorkers();
  for (int rank = 0; rank < 4; ++rank) c.Exit(rank, 0);
  CHECK(c.done());
  CHECK(c.record().ExitCode() == 0);
  for (int node : {0, 2}) c.Drop(node);
  CHECK(c.control().NodeLost(1));  // lost while the job ran
  CHECK_FALSE(c.control().NodeEnded(1));
  CHECK_FALSE(c.control().NodeLost(0));
  CHECK(c.control().NodeEnded(2));
}

TEST_CASE("job control: losing node 0 moves MASTER_ADDR and the port reservation to the next node",
          "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(1, 2));
  c.Run();
  c.Drop(0);
  c.ConfirmStops();
  CHECK(c.Count(1, MsgType::kReserve) == 1);
  c.Reserve(30001);
  auto a = c.Last<msg::Assign>(2, MsgType::kAssign);
  CHECK(a->master_addr == "10.0.0.2");
}

TEST_CASE("job control: below min_nodes there is no restart", "[jobcontrol]") {
  FakeCluster c("w0 slots=1\nw1 slots=1\n", Elastic(3, 2));
  c.Run();
  c.Drop(1);
  c.ConfirmStops();
  CHECK(c.done());
  CHECK(HasNotice(c, "not restarting: 1 node left, elastic.min_nodes is 2"));
  CHECK(c.record().ExitCode() == 1);
}

TEST_CASE("job control: a silent agent is lost at heartbeat_timeout, not a sweep later", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(1, 2));
  c.Run();
  c.Silence(2);
  c.Advance(2.999);
  CHECK(c.control().state() == CoordState::kRunning);
  c.Advance(0.001);
  CHECK(c.control().state() == CoordState::kStopping);
  CHECK(c.link(2).close_reason == "no heartbeat for 3s");
  c.ConfirmStops();
  CHECK(c.control().world_size() == 4);
}

TEST_CASE("job control: a coordinator that did not run loses nobody until it has read the agents again",
          "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(1, 2));
  c.Run();
  c.Silence(2);
  c.Stall(10.0);      // far past heartbeat_timeout (3 s); the agents' Pings wait unread
  c.Advance(0.05);    // the late sweep: judges nobody
  CHECK(c.control().state() == CoordState::kRunning);
  CHECK(c.lost_events().empty());
  c.Advance(1.0);     // the others' Pings are read; the next sweep is on time
  CHECK(c.control().state() == CoordState::kStopping);
  CHECK(c.lost_events() == std::vector<int>{2});  // the one really silent
}

TEST_CASE("job control: one timer, armed at the next deadline; a Ping per agent per interval", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(0));
  REQUIRE(c.timer().armed());  // the register deadline
  c.Run();
  const int before = c.Count(0, MsgType::kPing);
  c.Advance(10.0);
  CHECK(c.Count(0, MsgType::kPing) - before == 10);
  CHECK(c.control().state() == CoordState::kRunning);
}

TEST_CASE("job control: an agent that does not register in time aborts the job, naming the host",
          "[jobcontrol]") {
  CoordinatorOptions o;
  o.register_timeout = 30;
  FakeCluster c(kThreeHosts, Elastic(3), o);
  c.Register(0);
  c.Register(2);
  c.Advance(29.5);
  CHECK_FALSE(c.done());
  c.Advance(1.0);
  CHECK(c.done());
  REQUIRE(c.record().first_failure());
  CHECK(c.record().first_failure()->host == "w1");
  CHECK(c.record().first_failure()->what == "agent did not register within 30s");
}

TEST_CASE("job control: a standby steps in for a lost node; losing an idle standby is only a notice",
          "[jobcontrol]") {
  JobSpec job = Elastic(2, 2);
  job.elastic.max_nodes = 2;
  FakeCluster c("w0 slots=1\nw1 slots=1\nw2 slots=1\nw3 slots=1\n", job);
  c.Run();
  CHECK(c.NodesRunning() == std::vector<int>{0, 1});
  c.Drop(3);
  CHECK(HasNotice(c, "standby w3 lost"));
  CHECK(c.control().state() == CoordState::kRunning);
  c.Drop(1);
  c.ConfirmStops();
  c.Reserve();
  CHECK(c.NodesRunning() == std::vector<int>{0, 2});
  CHECK(c.control().world_size() == 2);
}

TEST_CASE("job control: a lost node rejoins and takes part from the next restart", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2, 2));
  c.Run();
  c.Drop(1);
  c.ConfirmStops();
  c.Reserve();
  c.StartWorkers();
  CHECK(c.lost_events() == std::vector<int>{1});  // the fleet may start a new agent there
  c.Register(1);
  CHECK(HasNotice(c, "w1 rejoined; it takes part from the next restart"));
  CHECK(c.fleet().registered == std::vector<int>{0, 1, 2, 1});  // the fleet hears of the rejoin
  CHECK(c.control().generation() == 1);  // no restart is forced
  c.Exit(0, 1);
  c.ConfirmStops();
  c.Reserve();
  CHECK(c.NodesRunning() == std::vector<int>{0, 1, 2});
  CHECK(c.control().world_size() == 6);
}

TEST_CASE("job control: a failing host sits out its cooldown unless min_nodes needs it", "[jobcontrol]") {
  JobSpec job = Elastic(3, 2);
  job.elastic.max_host_failures = 1;
  job.elastic.host_cooldown = 60;
  FakeCluster c(kThreeHosts, job);
  c.Run();
  c.Exit(2, 1);  // rank 2 runs on w1
  c.ConfirmStops();
  CHECK(HasNotice(c, "w1 sits out: its workers failed 1 time (elastic.max_host_failures)"));
  c.Reserve();
  CHECK(c.NodesRunning() == std::vector<int>{0, 2});
  c.StartWorkers();
  c.Exit(0, 1);  // w0 fails too: only w2 would be left, min_nodes needs one of them
  c.ConfirmStops();
  CHECK(HasNotice(c, "is in its cooldown"));
  c.Reserve();
  CHECK(c.NodesRunning().size() == 2);
  c.StartWorkers();
  c.Advance(61);
  c.Exit(1, 1);
  c.ConfirmStops();
  c.Reserve();
  CHECK(c.control().restarts() == 3);
}

TEST_CASE("job control: an agent lost while stopping counts as stopped and is left out", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(1, 1));
  c.Run();
  c.Exit(0, 2);
  c.Drop(2, "connection reset");
  CHECK(c.control().state() == CoordState::kStopping);
  c.ConfirmStops();
  c.Reserve();
  CHECK(c.NodesRunning() == std::vector<int>{0, 1});
  CHECK(c.record().restart_causes().at(0).exit_code == 2);  // the first failure is the cause
}

TEST_CASE("job control: two failures at once make one restart, the first is the cause", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(3));
  c.Run();
  c.Exit(0, 2);
  c.Exit(5, 5);
  c.Drop(1);
  c.ConfirmStops();
  CHECK(c.control().restarts() == 1);
  REQUIRE(c.record().restart_causes().size() == 1);
  CHECK(c.record().restart_causes()[0].rank == 0);
  CHECK(c.record().restart_causes()[0].exit_code == 2);
}

TEST_CASE("job control: agents that never confirm the stop are lost after the stop deadline", "[jobcontrol]") {
  CoordinatorOptions o;
  o.stop_grace = 1.0;
  FakeCluster c(kThreeHosts, Elastic(1), o);
  c.Run();
  c.Exit(0, 3);
  c.Advance(5.5);  // stop_grace + heartbeat_timeout + 2 = 6 s; agents keep pinging
  CHECK(c.control().state() == CoordState::kStopping);
  c.Advance(1.0);
  CHECK(c.done());
  CHECK(c.link(1).close_reason == "did not confirm the stop in time");
  CHECK(HasNotice(c, "not restarting: 0 nodes left"));
}

TEST_CASE("job control: a signal stops the job without a restart; a second one stops waiting", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(3));
  c.Run();
  c.control().RequestStop(2);
  CHECK(c.control().state() == CoordState::kStopping);
  c.control().RequestStop(2);
  CHECK(c.done());
  CHECK(c.record().ExitCode() == 130);
  CHECK(c.control().restarts() == 0);
}

TEST_CASE("job control: the fleet hears of registrations, losses and the launch tree's reports", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(1, 2));
  c.Run();
  CHECK(c.fleet().registered == std::vector<int>{0, 1, 2});
  c.Send(0, MsgType::kAgentEnded, msg::AgentEnded{2, 255, 0, "ssh: connection refused"}.Encode());
  REQUIRE(c.fleet().ended_reports.size() == 1);
  CHECK(c.fleet().ended_reports[0].first == 0);
  CHECK(c.fleet().ended_reports[0].second.reason == "ssh: connection refused");
  c.Silence(2);
  c.Advance(3.5);
  CHECK(c.fleet().lost == std::vector<int>{2});
}

TEST_CASE("job control: in the per-node form a node is named by the host name its agent reports", "[jobcontrol]") {
  CoordinatorOptions per_node;
  per_node.hosts_from_agents = true;
  FakeCluster c("node0 slots=1\nnode1 slots=1\nnode2 slots=1\n", Elastic(1), per_node);
  c.Run();
  CHECK(c.record().workers().at(1).host == "machine-node1");
  c.Drop(2);
  REQUIRE(c.record().first_failure());
  CHECK(c.record().first_failure()->host == "machine-node2");
  c.ConfirmStops();
  CHECK(HasNotice(c, "restart 1/1: generation 1 on 2 nodes, world size 2, after host machine-node2: agent lost"));
}

TEST_CASE("job control: in the per-node form every agent is told the job's exit status, elsewhere 0",
          "[jobcontrol]") {
  CoordinatorOptions per_node;
  per_node.hosts_from_agents = true;
  FakeCluster p("node0 slots=1\nnode1 slots=1\n", Elastic(0), per_node);
  p.Run();
  p.Exit(1, 3);
  p.ConfirmStops();
  REQUIRE(p.done());
  CHECK(p.Last<msg::Shutdown>(0, MsgType::kShutdown)->exit_code == 3);
  CHECK(p.Last<msg::Shutdown>(1, MsgType::kShutdown)->exit_code == 3);
  FakeCluster c(kThreeHosts, Elastic(0));
  c.Run();
  c.Exit(1, 3);
  c.ConfirmStops();
  REQUIRE(c.done());
  CHECK(c.Last<msg::Shutdown>(1, MsgType::kShutdown)->exit_code == 0);
}

TEST_CASE("job control: elsewhere a node keeps its hostfile name", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(0));
  c.Run();
  CHECK(c.record().workers().at(2).host == "w1");
}

}  // namespace ds::test
