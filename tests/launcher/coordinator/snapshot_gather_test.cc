// SnapshotGather on its own (no agents, no JobControl; times are made up):
// the setup each agent gets, each event (ready, gathered, retry, setup
// failed), and the failure ways: an agent lost mid-gather, a bad save, no
// complete save, stale and unowed answers. Words are checked where the user
// sees them.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "launcher/config/hostfile.h"
#include "launcher/config/selection.h"
#include "launcher/coordinator/snapshot_gather.h"

namespace ds {
namespace {

using Kind = GatherEvent::Kind;
const Clock::time_point kT0{std::chrono::hours(1)};
const char* kRun = "feed0001";

LaunchPlan PlanFor(const std::string& hostfile, int max_nodes = 0) {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_nodes = max_nodes;
  job.checkpoint.dir = "ckpt/{host}";
  job.working_dir = "/home/u/job";
  Hostfile hf = ParseHostfile(hostfile, "hostfile").value();
  return MakePlan(SelectHosts(hf, SelectionOptions{}).value(), job, /*use_gpus=*/false).value();
}

// A save of `step` by `world` ranks of `run`.
msg::SnapshotId Id(int64_t step, uint32_t world, const std::string& run = kRun) {
  return msg::SnapshotId{run, world, 0, "c0", fmt::format("set-{}-{}-{}", step, world, run)};
}
msg::ShardEntry E(int64_t step, uint32_t shard, uint32_t world, uint32_t origin) {
  return msg::ShardEntry{step, shard, Id(step, world), origin, 1, 64};
}
msg::SnapshotHeld Held(std::vector<msg::ShardEntry> added) {
  msg::SnapshotHeld m;
  m.added = std::move(added);
  return m;
}
msg::SnapshotReady Ready(int node) { return {fmt::format("10.0.0.{}:5000", node + 1), "/dev/shm/x", ""}; }
msg::Fetched Ok(const msg::Fetch& f) { return {f.generation, f.step, f.id.set, 128, 900, ""}; }

struct Gather {
  explicit Gather(const std::string& hostfile, int max_nodes = 0)
      : plan(PlanFor(hostfile, max_nodes)), names(Names(plan)), gather(plan, names, "s3cret", "job1", kRun) {}
  static std::vector<std::string> Names(const LaunchPlan& plan) {
    std::vector<std::string> out;
    for (const NodePlan& n : Candidates(plan)) out.push_back(n.host.name);
    return out;
  }
  // Every candidate is set up and ready.
  void AllReady() {
    for (size_t n = 0; n < Candidates(plan).size(); ++n) {
      gather.Setup(static_cast<int>(n));
      gather.OnReady(static_cast<int>(n), Ready(static_cast<int>(n)));
    }
  }
  LaunchPlan plan;
  std::vector<std::string> names;
  SnapshotGather gather;
};

const char* kThree = "w0 slots=1\nw1 slots=1\nw2 slots=1\n";
const std::vector<bool> kAllThree(3, true);

}  // namespace

TEST_CASE("snapshot gather: each agent's setup names its directory and a key derived from the secret",
          "[snapshots][gather]") {
  Gather g(kThree);
  const msg::SnapshotSetup s0 = g.gather.Setup(0);
  const msg::SnapshotSetup s2 = g.gather.Setup(2);
  CHECK(s0.dir == "/home/u/job/ckpt/w0");
  CHECK(s2.dir == "/home/u/job/ckpt/w2");
  CHECK(s0.keep == 2);
  CHECK(s0.run_id == kRun);
  CHECK(s0.peer_key.size() == 64);
  CHECK(s0.peer_key.find("s3cret") == std::string::npos);
  CHECK(s0.peer_key == s2.peer_key);
  CHECK(s0.peer_key != SnapshotGather(g.plan, g.names, "s3cret", "job2", kRun).Setup(0).peer_key);
}

TEST_CASE("snapshot gather: ready once every agent of the generation answered its setup", "[snapshots][gather]") {
  Gather g(kThree);
  for (int n = 0; n < 3; ++n) g.gather.Setup(n);
  CHECK(g.gather.OnReady(0, Ready(0)).kind == Kind::kNone);  // before Begin: nothing owed
  CHECK(g.gather.Begin(0, {0, 1, 2}).kind == Kind::kNone);
  CHECK(g.gather.OnReady(0, Ready(0)).kind == Kind::kNone);  // again: it was ready already
  CHECK(g.gather.OnReady(1, Ready(1)).kind == Kind::kNone);
  g.gather.Setup(1);  // its agent registered again: owed again
  CHECK(g.gather.OnReady(2, Ready(2)).kind == Kind::kNone);
  CHECK(g.gather.OnReady(1, Ready(1)).kind == Kind::kReady);
  // The next generation's agents are all set up: ready at once.
  CHECK(g.gather.Begin(1, {0, 2}).kind == Kind::kReady);
}

TEST_CASE("snapshot gather: an agent that cannot keep snapshots fails the setup with its words",
          "[snapshots][gather]") {
  Gather g(kThree);
  g.gather.Setup(1);
  const GatherEvent e = g.gather.OnReady(1, {"", "", "host w1: cannot create a directory like /dev/shm/x"});
  CHECK(e.kind == Kind::kSetupFailed);
  CHECK(e.what == "snapshots: host w1: cannot create a directory like /dev/shm/x");
}

TEST_CASE("snapshot gather: no save at all starts fresh, said only after a restart", "[snapshots][gather]") {
  Gather g(kThree);
  g.AllReady();
  REQUIRE(g.gather.Begin(0, {0, 1, 2}).kind == Kind::kReady);
  Gathering first = g.gather.Gather(kAllThree, kT0);
  CHECK(first.notices.empty());
  CHECK(first.fetch.step == -1);
  CHECK(first.fetch.sources.empty());
  REQUIRE(first.orders.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(first.orders[i].node == i);
    REQUIRE(first.orders[i].replicate.targets.size() == 1);  // replicas: 1, the next node in the ring
    CHECK(first.orders[i].replicate.targets[0].node == static_cast<uint32_t>((i + 1) % 3));
    CHECK(first.orders[i].replicate.targets[0].peer_addr == fmt::format("10.0.0.{}:5000", (i + 1) % 3 + 1));
  }
  CHECK(g.gather.resume_step() == -1);
  REQUIRE(g.gather.Begin(1, {0, 1, 2}).kind == Kind::kReady);
  CHECK(g.gather.Gather(kAllThree, kT0).notices ==
        std::vector<std::string>{"no snapshot or checkpoint held by any node: starting from scratch"});
}

TEST_CASE("snapshot gather: no complete save starts fresh and names the missing shards", "[snapshots][gather]") {
  Gather g(kThree);
  g.AllReady();
  g.gather.OnHeld(0, Held({E(300, 0, 3, 0)}));
  g.gather.OnHeld(1, Held({E(300, 1, 3, 1)}));
  REQUIRE(g.gather.Begin(0, {0, 1, 2}).kind == Kind::kReady);
  const Gathering got = g.gather.Gather(kAllThree, kT0);
  CHECK(got.notices == std::vector<std::string>{"no complete snapshot or checkpoint left: starting from scratch "
                                                "(step 300 lost shard 2 with the failed nodes)"});
  CHECK(got.fetch.step == -1);
  CHECK(g.gather.resume_step() == -1);
}

TEST_CASE("snapshot gather: gathered when the last agent fetched; stale answers change nothing",
          "[snapshots][gather]") {
  Gather g(kThree);
  g.AllReady();
  for (uint32_t n = 0; n < 3; ++n) g.gather.OnHeld(static_cast<int>(n), Held({E(400, n, 3, n)}));
  REQUIRE(g.gather.Begin(2, {0, 1, 2}).kind == Kind::kReady);
  const Gathering got = g.gather.Gather(kAllThree, kT0);
  CHECK(got.notices == std::vector<std::string>{"resuming from step 400: 3 shards from memory"});
  CHECK(got.fetch.generation == 2);
  CHECK(got.fetch.id == Id(400, 3));
  REQUIRE(got.fetch.sources.size() == 3);
  CHECK(got.fetch.sources[1].node == 1);
  CHECK(got.fetch.sources[1].peer_addr == "10.0.0.2:5000");
  CHECK(g.gather.resume_step() == 400);
  CHECK(g.gather.resume_id() == Id(400, 3));
  msg::Fetched old_gen = Ok(got.fetch);
  old_gen.generation = 1;
  CHECK(g.gather.OnFetched(0, old_gen, kT0).kind == Kind::kNone);
  CHECK(g.gather.OnFetched(0, Ok(got.fetch), kT0).kind == Kind::kNone);
  CHECK(g.gather.OnFetched(1, Ok(got.fetch), kT0).kind == Kind::kNone);
  CHECK(g.gather.OnFetched(1, Ok(got.fetch), kT0).kind == Kind::kNone);  // twice: owed once
  CHECK(g.gather.OnFetched(2, Ok(got.fetch), kT0).kind == Kind::kGathered);
  CHECK(g.gather.OnFetched(2, Ok(got.fetch), kT0).kind == Kind::kNone);  // after: not gathering
}

TEST_CASE("snapshot gather: a bad save is left out for an older one, and only for this generation",
          "[snapshots][gather]") {
  Gather g("w0 slots=1\nw1 slots=1\n");
  g.AllReady();
  g.gather.OnHeld(0, Held({E(100, 0, 2, 0), E(100, 1, 2, 1), E(200, 0, 2, 0), E(200, 1, 2, 1)}));
  const std::vector<bool> both(2, true);
  REQUIRE(g.gather.Begin(0, {0, 1}).kind == Kind::kReady);
  Gathering got = g.gather.Gather(both, kT0);
  REQUIRE(got.fetch.step == 200);
  msg::Fetched bad = Ok(got.fetch);
  bad.error = "fetching shard 0 of step 200 from 10.0.0.1:5000: corrupt";
  const GatherEvent e = g.gather.OnFetched(1, bad, kT0);
  CHECK(e.kind == Kind::kRetry);
  CHECK(e.what == "w1 could not gather step 200: fetching shard 0 of step 200 from 10.0.0.1:5000: corrupt; "
                  "trying an older step");
  const msg::Fetch abandoned = got.fetch;
  got = g.gather.Gather(both, kT0);
  CHECK(got.fetch.step == 100);
  CHECK(g.gather.OnFetched(0, Ok(abandoned), kT0).kind == Kind::kNone);  // the abandoned save's late answer
  CHECK(g.gather.OnFetched(0, Ok(got.fetch), kT0).kind == Kind::kNone);
  CHECK(g.gather.OnFetched(1, Ok(got.fetch), kT0).kind == Kind::kGathered);
  // The next generation tries every save again.
  REQUIRE(g.gather.Begin(1, {0, 1}).kind == Kind::kReady);
  CHECK(g.gather.Gather(both, kT0).fetch.step == 200);
}

TEST_CASE("snapshot gather: an agent lost mid-gather: its copies are gone, later answers are stale",
          "[snapshots][gather]") {
  Gather g(kThree);
  g.AllReady();
  // Step 400 replicated around the ring; step 500 only in the writers' memory.
  for (uint32_t n = 0; n < 3; ++n)
    g.gather.OnHeld(static_cast<int>(n), Held({E(400, n, 3, n), E(400, (n + 2) % 3, 3, (n + 2) % 3), E(500, n, 3, n)}));
  REQUIRE(g.gather.Begin(0, {0, 1, 2}).kind == Kind::kReady);
  const Gathering first = g.gather.Gather(kAllThree, kT0);
  REQUIRE(first.fetch.step == 500);
  CHECK(g.gather.OnFetched(0, Ok(first.fetch), kT0).kind == Kind::kNone);
  g.gather.Forget(2);  // w2 lost: JobControl stops the generation
  g.gather.Abandon();
  CHECK(g.gather.OnFetched(1, Ok(first.fetch), kT0).kind == Kind::kNone);
  CHECK(g.gather.OnFetched(2, Ok(first.fetch), kT0).kind == Kind::kNone);
  // The next generation, on the two left, resumes from the step their replicas complete.
  REQUIRE(g.gather.Begin(1, {0, 1}).kind == Kind::kReady);
  const Gathering next = g.gather.Gather({true, true, false}, kT0);
  CHECK(next.notices == std::vector<std::string>{"resuming from step 400: 2 shards from memory, 1 from w0's replica "
                                                 "of w2; step 500 lost shard 2 with the failed nodes, so an older "
                                                 "step"});
  REQUIRE(next.fetch.sources.size() == 3);
  CHECK(next.fetch.sources[2].node == 0);
  REQUIRE(next.orders.size() == 2);
  CHECK(next.orders[0].replicate.targets.at(0).node == 1);  // two nodes: each other's buddy
  CHECK(next.orders[1].replicate.targets.at(0).node == 0);
  CHECK(g.gather.OnFetched(0, Ok(next.fetch), kT0).kind == Kind::kNone);
  CHECK(g.gather.OnFetched(1, Ok(next.fetch), kT0).kind == Kind::kGathered);
}

TEST_CASE("snapshot gather: a standby set up while the generation fetches changes nothing", "[snapshots][gather]") {
  Gather g(kThree, /*max_nodes=*/2);  // w2 is a standby
  for (int n = 0; n < 2; ++n) {
    g.gather.Setup(n);
    g.gather.OnReady(n, Ready(n));
  }
  REQUIRE(g.gather.Begin(0, {0, 1}).kind == Kind::kReady);
  const Gathering got = g.gather.Gather({true, true, true}, kT0);
  g.gather.Setup(2);
  CHECK(g.gather.OnReady(2, Ready(2)).kind == Kind::kNone);
  CHECK(g.gather.OnFetched(0, Ok(got.fetch), kT0).kind == Kind::kNone);
  CHECK(g.gather.OnFetched(1, Ok(got.fetch), kT0).kind == Kind::kGathered);
}

TEST_CASE("snapshot gather: the summary adds up the agents' latest totals", "[snapshots][gather]") {
  Gather g("w0 slots=1\nw1 slots=1\n");
  msg::SnapshotHeld m;
  m.counters.handoffs = 2;
  m.counters.handoff_bytes = 2'000'000;
  m.counters.sent_bytes = 2'000'000;
  m.counters.sent_micros = 10'000;
  m.counters.budget_wait_micros = 100'000;
  m.counters.cpu_micros = 250'000;
  g.gather.OnHeld(0, m);
  g.gather.OnHeld(0, m);  // totals, not increments
  g.gather.OnHeld(1, m);
  CHECK(g.gather.Summary() == "snapshots: 4 shards handed to the agents (4.0 MB); replicated 4.0 MB (200 MB/s); "
                              "written to the nodes' disks 0.0 MB (-); agents' CPU 0.50 s (and 0.20 s waiting for "
                              "their CPU budget)");
}

}  // namespace ds
