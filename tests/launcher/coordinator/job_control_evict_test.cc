// JobControl and elastic.evict_slow (job_control_evict.cc): a node reported
// slow (in compute, or by its heartbeat round trip: a slow link) leaves through the ordinary restart path (at once without
// snapshots; with snapshots once every node handed over a newer step),
// sits out the restarts of its cooldown and is a candidate
// again after it; with no restart left, or min_nodes at stake, one line
// says it stays and nothing is stopped.
#include <catch2/catch.hpp>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds::test {
namespace {

using wire::MsgType;

const char* kThreeHosts = "w0 slots=2\nw1 slots=2\nw2 slots=2\n";

JobSpec Evicting(int max_restarts) {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_restarts = max_restarts;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  job.elastic.evict_slow = true;
  job.elastic.evict_cooldown = 600;
  return job;
}

// Four seconds of summaries: the last node 2.4x slower in compute than the others.
void SlowLastNode(FakeCluster& c, int nodes) {
  for (int s = 0; s <= 4; ++s) {
    for (int node = 0; node < nodes; ++node) {
      msg::Progress p{static_cast<uint32_t>(c.control().generation()), {}};
      const int64_t compute = node == nodes - 1 ? 480000 : 200000;
      for (int i = 0; i < 2; ++i) p.ranks.push_back({2 * node + i, 10 + s, 500000, compute, -1});
      c.Send(node, MsgType::kProgress, p.Encode());
    }
    c.Advance(1.0);
  }
}

int Said(const FakeCluster& c, const std::string& text) {
  int n = 0;
  for (const auto& line : c.notices()) n += line == text;
  return n;
}

// Six heartbeats whose Pings the last node answers `rtt` seconds late, the others after 1 ms.
void SlowLastLink(FakeCluster& c, int nodes, double rtt) {
  for (int s = 0; s < 6; ++s) {
    c.Advance(s == 0 ? 1.0 : 1.0 - rtt);  // to the coordinator's Pings, stamped
    std::vector<double> delays(static_cast<size_t>(nodes), 0.001);
    delays.back() = rtt;
    c.EchoPings(delays);
  }
}

// Rank 0 fails; the next generation reserves (its Assigns are sent) and starts.
void FailAndRestart(FakeCluster& c) {
  c.Exit(0, 1);
  c.ConfirmStops();
  c.Reserve();
  c.StartWorkers();
}

}  // namespace

TEST_CASE("job control: a node whose heartbeat round trip stays high is named and evicted", "[jobcontrol][evict]") {
  FakeCluster c(kThreeHosts, Evicting(1));
  c.Run();
  SlowLastLink(c, 3, 0.08);
  CHECK(Said(c, "slow link: w2 heartbeat round trip 80 ms, 80x the other nodes' (1.0 ms)") == 1);
  CHECK(Said(c, "evict: w2 (slow) leaves now (the job keeps no snapshots); out for 600 s") == 1);
  c.ConfirmStops();
  c.Reserve();
  CHECK(c.control().generation() == 1);
  CHECK(c.NodesRunning() == std::vector<int>{0, 1});

  FakeCluster fine(kThreeHosts, Evicting(1));  // 3 ms more than the others: under slow_link_floor
  fine.Run();
  SlowLastLink(fine, 3, 0.004);
  CHECK(fine.control().slow_nodes().empty());
  CHECK(fine.control().generation() == 0);
}

TEST_CASE("job control: evict_slow restarts without the slow node until its cooldown ends", "[jobcontrol][evict]") {
  FakeCluster c(kThreeHosts, Evicting(3));
  c.Run();
  SlowLastNode(c, 3);
  CHECK(Said(c, "evict: w2 (slow) leaves now (the job keeps no snapshots); out for 600 s") == 1);
  CHECK(c.Count(2, MsgType::kStop) == 1);
  c.ConfirmStops();
  REQUIRE(c.control().generation() == 1);
  c.Reserve();
  CHECK(c.NodesRunning() == std::vector<int>{0, 1});
  c.StartWorkers();
  FailAndRestart(c);  // another failure within the cooldown: still out
  CHECK(c.control().generation() == 2);
  CHECK(c.NodesRunning() == std::vector<int>{0, 1});
  c.Advance(600.0);
  FailAndRestart(c);  // after it: a candidate again
  CHECK(c.control().generation() == 3);
  CHECK(c.NodesRunning() == std::vector<int>{0, 1, 2});
}

TEST_CASE("job control: with snapshots the slow node leaves at the next step every node handed over",
          "[jobcontrol][evict]") {
  JobSpec job = Evicting(3);
  job.checkpoint.dir = "/ckpt/{host}";  // snapshots on
  FakeCluster c(kThreeHosts, job);
  c.RegisterAll();
  for (int node = 0; node < 3; ++node)
    c.Send(node, MsgType::kSnapshotReady, msg::SnapshotReady{"10.0.0." + std::to_string(node + 1) + ":5000", "/dev/shm/x", ""}.Encode());
  for (int node = 0; node < 3; ++node) {
    auto f = c.Last<msg::Fetch>(node, MsgType::kFetch);
    REQUIRE(f);
    c.Send(node, MsgType::kFetched, msg::Fetched{f->generation, f->step, f->id.set, 0, 0, ""}.Encode());
  }
  c.Reserve();
  c.StartWorkers();
  auto held = [&](int node, int64_t step) {
    msg::SnapshotHeld m;
    for (uint32_t i = 0; i < 2; ++i)
      m.added.push_back(msg::ShardEntry{step, 2 * static_cast<uint32_t>(node) + i,
                                        msg::SnapshotId{"feed0001", 6, 0, "c0", "00000000000000aa"},
                                        static_cast<uint32_t>(node), 1, 64});
    c.Send(node, MsgType::kSnapshotHeld, m.Encode());
  };
  for (int node = 0; node < 3; ++node) held(node, 200);
  SlowLastNode(c, 3);
  CHECK(c.control().slow_nodes() == std::vector<uint32_t>{2});
  held(0, 400);
  held(1, 400);
  CHECK(c.Count(0, MsgType::kStop) == 0);  // not every node has a newer step yet
  held(2, 400);
  CHECK(Said(c, "evict: w2 (slow) leaves at the snapshot of step 400; out for 600 s") == 1);
  CHECK(c.Count(0, MsgType::kStop) == 1);
}

TEST_CASE("job control: a slow node stays without a restart left or below min_nodes", "[jobcontrol][evict]") {
  FakeCluster none(kThreeHosts, Evicting(0));
  none.Run();
  SlowLastNode(none, 3);
  CHECK(Said(none, "evict: w2 stays: no restart left (elastic.max_restarts 0)") == 1);
  CHECK(none.Count(0, MsgType::kStop) == 0);

  JobSpec two = Evicting(2);
  two.elastic.min_nodes = 2;
  FakeCluster c("w0 slots=2\nw1 slots=2\n", two);
  c.Run();
  SlowLastNode(c, 2);
  CHECK(Said(c, "evict: w1 stays: without it fewer than elastic.min_nodes (2) are left") == 1);
  CHECK(c.Count(0, MsgType::kStop) == 0);
}

TEST_CASE("job control: without evict_slow a slow node is only reported", "[jobcontrol][evict]") {
  JobSpec job = Evicting(3);
  job.elastic.evict_slow = false;
  FakeCluster c(kThreeHosts, job);
  c.Run();
  SlowLastNode(c, 3);
  CHECK(c.control().slow_nodes() == std::vector<uint32_t>{2});
  CHECK(c.Count(0, MsgType::kStop) == 0);
}

}  // namespace ds::test
