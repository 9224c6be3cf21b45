// JobControl with snapshots on (job_control_snapshot.cc), the agents played
// by the test: SnapshotSetup per node, the gather before every generation
// (Replicate targets in ring order, Fetch with the chosen holders), the step
// the workers resume from, a failed gather falling back, and the summary.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds::test {
namespace {

using wire::MsgType;

JobSpec SnapshotJob(const std::string& dir = "/ckpt/{host}") {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_restarts = 3;
  job.elastic.min_nodes = 1;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  job.checkpoint.dir = dir;
  return job;
}

const char* kThreeHosts = "w0 slots=1\nw1 slots=1\nw2 slots=1\n";

// A fake digest per (step, world, run): one save.
std::string Set(int64_t step, uint32_t world, const std::string& run = "feed0001") {
  return fmt::format("{:016x}", std::hash<std::string>()(fmt::format("{} {} {}", step, world, run)));
}
// A shard of this run's (FakeCluster's run id) save of `step` at `world`.
msg::ShardEntry E(int64_t step, uint32_t shard, uint32_t world, uint32_t origin) {
  return msg::ShardEntry{step, shard, msg::SnapshotId{"feed0001", world, 0, "c0", Set(step, world)}, origin, 1, 64};
}
void Holds(FakeCluster& c, int node, std::vector<msg::ShardEntry> added) {
  msg::SnapshotHeld m;
  m.added = std::move(added);
  m.counters.handoffs = 2;
  m.counters.handoff_bytes = 2'000'000;
  m.counters.sent_bytes = 2'000'000;
  m.counters.sent_micros = 10'000;
  c.Send(node, MsgType::kSnapshotHeld, m.Encode());
}
void Ready(FakeCluster& c, int node) {
  c.Send(node, MsgType::kSnapshotReady, msg::SnapshotReady{"10.0.0." + std::to_string(node + 1) + ":5000", "/dev/shm/x", ""}.Encode());
}
// Every agent with a Fetch of the current generation answers it.
void FetchAll(FakeCluster& c) {
  for (size_t i = 0; i < c.candidates(); ++i) {
    auto f = c.Last<msg::Fetch>(static_cast<int>(i), MsgType::kFetch);
    if (!f || static_cast<int>(f->generation) != c.control().generation() || c.link(static_cast<int>(i)).closed()) continue;
    c.Send(static_cast<int>(i), MsgType::kFetched, msg::Fetched{f->generation, f->step, f->id.set, 128, 900, ""}.Encode());
  }
}
std::string Env(const msg::Assign& a, const std::string& key) {
  for (const auto& [k, v] : a.workers.at(0).env)
    if (k == key) return v;
  return "<unset>";
}
bool HasNotice(const FakeCluster& c, const std::string& text) {
  for (const auto& n : c.notices())
    if (n.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("job control snapshots: setup per node, then a gather before the first generation", "[jobcontrol][snapshots]") {
  FakeCluster c(kThreeHosts, SnapshotJob());
  c.RegisterAll();
  std::string key;
  for (int node = 0; node < 3; ++node) {
    auto s = c.Last<msg::SnapshotSetup>(node, MsgType::kSnapshotSetup);
    REQUIRE(s);
    CHECK(s->dir == "/ckpt/w" + std::to_string(node));
    CHECK(s->keep == 2);
    CHECK(s->peer_key.size() == 64);
    CHECK(s->peer_key.find("secret") == std::string::npos);
    if (node > 0) CHECK(s->peer_key == key);
    key = s->peer_key;
  }
  CHECK(c.control().state() == CoordState::kGathering);
  Ready(c, 0);
  Ready(c, 1);
  CHECK(c.Count(0, MsgType::kFetch) == 0);  // waits for every node
  Ready(c, 2);
  for (int node = 0; node < 3; ++node) {
    auto r = c.Last<msg::Replicate>(node, MsgType::kReplicate);
    REQUIRE(r);
    REQUIRE(r->targets.size() == 1);
    CHECK(static_cast<int>(r->targets[0].node) == (node + 1) % 3);
    CHECK(r->targets[0].peer_addr == "10.0.0." + std::to_string((node + 1) % 3 + 1) + ":5000");
    auto f = c.Last<msg::Fetch>(node, MsgType::kFetch);
    REQUIRE(f);
    CHECK(f->step == -1);
    CHECK(f->sources.empty());
  }
  CHECK(c.Count(0, MsgType::kReserve) == 0);
  FetchAll(c);
  REQUIRE(c.Count(0, MsgType::kReserve) == 1);
  c.Reserve();
  auto a = c.Last<msg::Assign>(1, MsgType::kAssign);
  REQUIRE(a);
  CHECK(Env(*a, "DSLAUNCH_RESUME_STEP") == "-1");
  CHECK(Env(*a, "DSLAUNCH_RESUME_SET") == "");
  CHECK(Env(*a, "DSLAUNCH_RUN_ID") == "feed0001");
  CHECK(c.Last<msg::SnapshotSetup>(0, MsgType::kSnapshotSetup)->run_id == "feed0001");
}

TEST_CASE("job control snapshots: a lost node's shard comes from its buddy's replica", "[jobcontrol][snapshots]") {
  FakeCluster c(kThreeHosts, SnapshotJob());
  c.RegisterAll();
  for (int node = 0; node < 3; ++node) Ready(c, node);
  FetchAll(c);
  c.Reserve();
  c.StartWorkers();
  // Step 400 replicated around the ring; step 500 only in the writers' memory.
  for (uint32_t n = 0; n < 3; ++n)
    Holds(c, static_cast<int>(n), {E(400, n, 3, n), E(400, (n + 2) % 3, 3, (n + 2) % 3), E(500, n, 3, n)});
  c.Drop(2);
  c.ConfirmStops();
  REQUIRE(c.control().state() == CoordState::kGathering);
  CHECK(HasNotice(c, "resuming from step 400: 2 shards from memory, 1 from w0's replica of w2; step 500 lost shard 2"));
  for (int node : {0, 1}) {
    auto f = c.Last<msg::Fetch>(node, MsgType::kFetch);
    REQUIRE(f);
    CHECK(f->generation == 1);
    CHECK(f->step == 400);
    CHECK(f->id == E(400, 0, 3, 0).id);
    REQUIRE(f->sources.size() == 3);
    CHECK(f->sources[2].node == 0);
    CHECK(f->sources[2].peer_addr == "10.0.0.1:5000");
    auto r = c.Last<msg::Replicate>(node, MsgType::kReplicate);
    REQUIRE(r->targets.size() == 1);
    CHECK(static_cast<int>(r->targets[0].node) == 1 - node);  // two nodes: each other's buddy
  }
  CHECK(c.Count(2, MsgType::kFetch) == 1);  // the lost node got only generation 0's
  FetchAll(c);
  c.Reserve();
  auto a = c.Last<msg::Assign>(0, MsgType::kAssign);
  REQUIRE(a);
  CHECK(a->generation == 1);
  CHECK(Env(*a, "DSLAUNCH_RESUME_STEP") == "400");
  CHECK(Env(*a, "DSLAUNCH_RESUME_SET") == Set(400, 3));
  CHECK(Env(*a, "DSLAUNCH_RUN_ID") == "feed0001");
}

TEST_CASE("job control snapshots: a step that cannot be gathered gives way to an older one", "[jobcontrol][snapshots]") {
  FakeCluster c("w0 slots=1\nw1 slots=1\n", SnapshotJob());
  c.RegisterAll();
  Holds(c, 0, {E(100, 0, 2, 0), E(100, 1, 2, 1), E(200, 0, 2, 0), E(200, 1, 2, 1)});
  for (int node = 0; node < 2; ++node) Ready(c, node);
  auto f = c.Last<msg::Fetch>(1, MsgType::kFetch);
  REQUIRE(f->step == 200);
  c.Send(1, MsgType::kFetched, msg::Fetched{0, 200, Set(200, 2), 0, 0, "fetching shard 0 of step 200 from 10.0.0.1:5000: corrupt"}.Encode());
  CHECK(HasNotice(c, "w1 could not gather step 200: fetching shard 0 of step 200 from 10.0.0.1:5000: corrupt; trying an older step"));
  f = c.Last<msg::Fetch>(1, MsgType::kFetch);
  CHECK(f->step == 100);
  // The late answer for the abandoned step changes nothing.
  c.Send(0, MsgType::kFetched, msg::Fetched{0, 200, Set(200, 2), 0, 0, ""}.Encode());
  CHECK(c.control().state() == CoordState::kGathering);
  FetchAll(c);
  CHECK(c.control().state() == CoordState::kReserving);
}

TEST_CASE("job control snapshots: earlier runs' saves, one save of a step failing to gather, another of it taken",
          "[jobcontrol][snapshots]") {
  FakeCluster c("w0 slots=1\nw1 slots=1\n", SnapshotJob());
  c.RegisterAll();
  // Two earlier runs saved step 300 whole (on w0's disk); the later one's
  // id sorts after. A third save, of an earlier step, is incomplete.
  auto disk = [](int64_t step, uint32_t shard, const std::string& run) {
    return msg::ShardEntry{step, shard, msg::SnapshotId{run, 2, 0, "c0", Set(step, 2, run)}, shard, 2, 64};
  };
  Holds(c, 0, {disk(300, 0, "fe000000"), disk(300, 1, "fe000000"), disk(300, 0, "feed0000"), disk(300, 1, "feed0000"),
               disk(50, 0, "fe000000")});
  for (int node = 0; node < 2; ++node) Ready(c, node);
  CHECK(HasNotice(c, "resuming from step 300 of an earlier run (feed0000, 2 ranks at ZeRO stage 0): 2 shards from "
                     "w0's disk"));
  CHECK(HasNotice(c, "keeping 2 saved steps of 1 earlier run in the nodes' checkpoint directories: this run never "
                     "prunes or overwrites them"));
  auto f = c.Last<msg::Fetch>(1, MsgType::kFetch);
  REQUIRE(f);
  CHECK(f->id.run == "feed0000");
  c.Send(1, MsgType::kFetched, msg::Fetched{0, 300, Set(300, 2, "feed0000"), 0, 0, "corrupt"}.Encode());
  f = c.Last<msg::Fetch>(1, MsgType::kFetch);
  CHECK(f->step == 300);  // the other save of the same step
  CHECK(f->id.run == "fe000000");
  // The late answer for the abandoned save of step 300 changes nothing.
  c.Send(0, MsgType::kFetched, msg::Fetched{0, 300, Set(300, 2, "feed0000"), 0, 0, ""}.Encode());
  CHECK(c.control().state() == CoordState::kGathering);
  FetchAll(c);
  CHECK(c.control().state() == CoordState::kReserving);
  int kept = 0;
  for (const auto& n : c.notices()) kept += n.rfind("keeping ", 0) == 0;
  CHECK(kept == 1);  // said once
  c.Reserve();
  CHECK(Env(*c.Last<msg::Assign>(0, MsgType::kAssign), "DSLAUNCH_RESUME_SET") == Set(300, 2, "fe000000"));
}

TEST_CASE("job control snapshots: a standby's late setup does not start the gather over", "[jobcontrol][snapshots]") {
  JobSpec job = SnapshotJob();
  job.elastic.max_nodes = 2;  // w2 waits as a standby
  FakeCluster c(kThreeHosts, job);
  c.RegisterAll();
  Ready(c, 0);
  Ready(c, 1);
  REQUIRE(c.Count(0, MsgType::kFetch) == 1);
  Ready(c, 2);
  CHECK(c.Count(0, MsgType::kFetch) == 1);
  CHECK(c.Count(1, MsgType::kReplicate) == 1);
  FetchAll(c);
  CHECK(c.control().state() == CoordState::kReserving);
}

TEST_CASE("job control snapshots: a node that cannot keep snapshots ends the job naming it", "[jobcontrol][snapshots]") {
  FakeCluster c(kThreeHosts, SnapshotJob());
  c.RegisterAll();
  c.Send(1, MsgType::kSnapshotReady, msg::SnapshotReady{"", "", "host w1: cannot create a directory like /dev/shm/x"}.Encode());
  c.ConfirmStops();
  CHECK(c.done());
  REQUIRE(c.record().first_failure());
  CHECK(c.record().first_failure()->host == "w1");
  CHECK(c.record().first_failure()->what == "snapshots: host w1: cannot create a directory like /dev/shm/x");
}

TEST_CASE("job control snapshots: off for a shared directory without replicas", "[jobcontrol][snapshots]") {
  FakeCluster c(kThreeHosts, SnapshotJob("/shared/ckpt"));
  c.RegisterAll();
  CHECK(c.Count(0, MsgType::kSnapshotSetup) == 0);
  CHECK(c.Count(0, MsgType::kReserve) == 1);
  c.Reserve();
  CHECK(Env(*c.Last<msg::Assign>(0, MsgType::kAssign), "DSLAUNCH_RESUME_STEP") == "<unset>");
}

TEST_CASE("job control snapshots: the summary adds up the agents' totals", "[jobcontrol][snapshots]") {
  FakeCluster c("w0 slots=1\nw1 slots=1\n", SnapshotJob());
  c.RegisterAll();
  for (int node = 0; node < 2; ++node) Ready(c, node);
  FetchAll(c);
  c.Reserve();
  c.StartWorkers();
  Holds(c, 0, {E(10, 0, 2, 0)});
  Holds(c, 1, {E(10, 1, 2, 1)});
  c.Exit(0, 0);
  c.Exit(1, 0);
  REQUIRE(c.done());
  CHECK(c.record().snapshot_summary ==
        "snapshots: 4 shards handed to the agents (4.0 MB); replicated 4.0 MB (200 MB/s); "
        "written to the nodes' disks 0.0 MB (-); agents' CPU 0.00 s; 0 of 1 complete saves on enough nodes to "
        "survive a loss");
}

}  // namespace ds::test
