// JobControl taking over a job whose coordinator was lost (Adopt): a second
// JobControl, given the first one's state, adopts the running generation
// from the agents' Resume without a Reserve or an Assign, and the job ends
// as it would have; what ended during the gap counts once adopted; a node
// that kept something else or does not come back fails the generation into
// the ordinary restart; a generation still starting starts again as the
// next one; a Resume to a coordinator that is not adopting stops the
// workers it names.
#include <catch2/catch.hpp>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds::test {
namespace {

const char* kThreeHosts = "w0 slots=2\nw1 slots=2\nw2 slots=2\n";

JobSpec Elastic() {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_restarts = 2;
  job.elastic.min_nodes = 1;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  return job;
}

// What node `node` kept of the first coordinator's generation, as its agent says it.
msg::Resume KeptBy(FakeCluster& old, int node) {
  msg::Resume r;
  r.generation = static_cast<uint32_t>(old.control().generation());
  r.running = 1;
  r.token_seen = 5;
  for (const auto& [rank, w] : old.record().workers())
    if (w.node == node) r.workers.push_back({rank, w.pid});
  return r;
}

// The old coordinator's job running generation 0; `next` adopts its state.
struct Takeover {
  FakeCluster old{kThreeHosts, Elastic()};
  FakeCluster next{kThreeHosts, Elastic()};
  explicit Takeover(bool register_all = true, CoordinatorOptions options = {})
      : next{kThreeHosts, Elastic(), std::move(options)} {
    old.Run();
    REQUIRE(next.control().Adopt(old.control().State()).ok());
    if (register_all) next.RegisterAll();
  }
  void Resume(int node) { next.Send(node, wire::MsgType::kResume, KeptBy(old, node).Encode()); }
  int Sent(wire::MsgType type) {
    int n = 0;
    for (int node = 0; node < 3; ++node) n += next.Count(node, type);
    return n;
  }
};

TEST_CASE("job control adopt: the running generation is taken over as it runs, no worker restarted, and the job "
          "ends 0", "[jobcontrol]") {
  Takeover t;
  t.Resume(0);
  t.Resume(1);
  CHECK(t.next.control().state() == CoordState::kWaitingForAgents);  // w2 is not back yet
  CHECK(t.next.control().takeover().empty());
  t.Resume(2);
  CHECK(t.next.control().state() == CoordState::kRunning);
  CHECK(t.next.control().generation() == 0);
  CHECK(t.next.control().world_size() == 6);
  CHECK(t.Sent(wire::MsgType::kReserve) == 0);
  CHECK(t.Sent(wire::MsgType::kAssign) == 0);
  CHECK(t.Sent(wire::MsgType::kStop) == 0);
  REQUIRE_FALSE(t.next.notices().empty());
  CHECK(t.next.notices().back() == "took over generation 0: its 6 worker(s) on 3 node(s) ran on, none restarted");
  CHECK(t.next.control().takeover() == t.next.notices().back());  // for attach clients that come later
  CHECK(t.next.record().workers().at(3).pid == 1003);
  for (int rank = 0; rank < 6; ++rank) t.next.Exit(rank, 0);
  CHECK(t.next.done());
  CHECK(t.next.record().ExitCode() == 0);
  CHECK(t.next.control().restarts() == 0);
}

// The leader that takes over is itself lost (frozen, partitioned) before
// every agent is back: the state it wrote meanwhile must still say the
// generation runs, or the third leader would start it afresh and stop the
// very workers the second one kept.
TEST_CASE("job control adopt: the state written while adopting says the generation runs; a third leader adopts it "
          "as it runs", "[jobcontrol]") {
  Takeover t;
  t.Resume(0);
  REQUIRE(t.next.control().state() == CoordState::kWaitingForAgents);
  const JobState mid = t.next.control().State();
  CHECK(mid.phase == CoordState::kRunning);
  CHECK(mid.generation == 0);
  CHECK(mid.generation_nodes == std::vector<int>{0, 1, 2});
  FakeCluster third{kThreeHosts, Elastic()};
  REQUIRE(third.control().Adopt(mid).ok());
  third.RegisterAll();
  for (int node = 0; node < 3; ++node) third.Send(node, wire::MsgType::kResume, KeptBy(t.old, node).Encode());
  CHECK(third.control().state() == CoordState::kRunning);
  CHECK(third.notices().back() == "took over generation 0: its 6 worker(s) on 3 node(s) ran on, none restarted");
  int stops = 0;
  for (int node = 0; node < 3; ++node) stops += third.Count(node, wire::MsgType::kStop);
  CHECK(stops == 0);
}

TEST_CASE("job control adopt: a worker that failed while no coordinator listened fails the generation once it is "
          "adopted", "[jobcontrol]") {
  Takeover t;
  t.Resume(0);
  t.next.Exit(1, 7);  // held by w0's agent through the gap, sent after its Resume
  CHECK(t.next.control().state() == CoordState::kWaitingForAgents);
  t.Resume(1);
  t.Resume(2);
  CHECK(t.Sent(wire::MsgType::kStop) == 3);  // the ordinary restart: every agent stops
  t.next.ConfirmStops();
  t.next.Reserve();
  CHECK(t.next.control().generation() == 1);
  CHECK(t.next.control().restarts() == 1);
}

TEST_CASE("job control adopt: a node that kept another generation, or none, or does not come back, fails the "
          "generation into the restart", "[jobcontrol]") {
  SECTION("another generation") {
    Takeover t;
    t.Resume(0);
    t.Resume(1);
    msg::Resume other = KeptBy(t.old, 2);
    other.generation = 1;  // newer than the state the old coordinator wrote
    t.next.Send(2, wire::MsgType::kResume, other.Encode());
    CHECK(t.next.notices().back() == "generation 0 cannot be taken over as it runs: w2 kept generation 1, the job's "
                                     "is generation 0; it restarts");
    const auto stop = t.next.Last<msg::Stop>(2, wire::MsgType::kStop);
    REQUIRE(stop);
    CHECK(stop->generation == 1);  // reaches what w2 runs
    t.next.ConfirmStops();
    t.next.Reserve();
    CHECK(t.next.control().generation() == 2);
  }
  SECTION("not back within register_timeout") {
    Takeover t(/*register_all=*/false);
    t.next.Register(0);
    t.next.Register(2);
    t.Resume(0);
    t.Resume(2);
    t.next.Advance(29);
    CHECK(t.next.control().state() == CoordState::kWaitingForAgents);
    t.next.Advance(2);  // register_timeout (30 s)
    REQUIRE_FALSE(t.next.notices().empty());
    CHECK(t.next.notices().front() == "generation 0 cannot be taken over as it runs: w1 did not come back; it restarts");
    CHECK(t.next.control().takeover() == t.next.notices().front());
    t.next.ConfirmStops();
    t.next.Reserve();
    CHECK(t.next.control().generation() == 1);
    CHECK(t.next.control().generation_nodes() == std::vector<int>{0, 2});
  }
  SECTION("not back within the agents' grace, when it is shorter: its workers are gone by then") {
    CoordinatorOptions options;
    options.coordinator_grace = 10;
    Takeover t(/*register_all=*/false, options);
    t.next.Register(0);
    t.next.Register(2);
    t.Resume(0);
    t.Resume(2);
    t.next.Advance(9);
    CHECK(t.next.control().state() == CoordState::kWaitingForAgents);
    t.next.Advance(2);
    REQUIRE_FALSE(t.next.notices().empty());
    CHECK(t.next.notices().front() == "generation 0 cannot be taken over as it runs: w1 did not come back; it restarts");
  }
  SECTION("lost before its Resume") {
    Takeover t;
    t.Resume(0);
    t.Resume(2);
    t.next.Drop(1);  // no need to wait for the limit
    REQUIRE_FALSE(t.next.notices().empty());
    CHECK(t.next.notices().front() == "generation 0 cannot be taken over as it runs: w1 did not come back; it restarts");
    CHECK(t.next.control().state() == CoordState::kStopping);
  }
}

TEST_CASE("job control adopt: a generation still starting when its coordinator was lost starts again as the next",
          "[jobcontrol]") {
  FakeCluster old(kThreeHosts, Elastic());
  old.RegisterAll();  // reserving: no workers yet
  const JobState s = old.control().State();
  REQUIRE(s.phase == CoordState::kReserving);
  FakeCluster next(kThreeHosts, Elastic());
  REQUIRE(next.control().Adopt(s).ok());
  CHECK(next.notices().back() ==
        "the old coordinator was lost while generation 0 was starting (reserving); it starts again as generation 1");
  next.RegisterAll();
  next.Reserve();
  next.StartWorkers();
  CHECK(next.control().generation() == 1);
  CHECK(next.control().state() == CoordState::kRunning);
}

TEST_CASE("job control adopt: an ended job is refused; a Resume to a coordinator that is not adopting stops what it "
          "names", "[jobcontrol]") {
  FakeCluster old(kThreeHosts, Elastic());
  old.Run();
  JobState ended = old.control().State();
  ended.phase = CoordState::kDone;
  FakeCluster next(kThreeHosts, Elastic());
  CHECK(next.control().Adopt(ended).message() == "job job has ended; there is nothing to take over");

  msg::Resume stale = KeptBy(old, 1);
  stale.generation = 4;
  old.Send(1, wire::MsgType::kResume, stale.Encode());
  const auto stop = old.Last<msg::Stop>(1, wire::MsgType::kStop);
  REQUIRE(stop);
  CHECK(stop->generation == 4);
  CHECK(old.control().state() == CoordState::kRunning);  // its own generation goes on
}

}  // namespace
}  // namespace ds::test
