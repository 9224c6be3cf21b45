// SnapshotIndex (launcher/coordinator/snapshot_index.h): the recovery
// decision over what the living nodes hold, the holder preferred per shard,
// the fallback to an older or on-disk step, and the words the user reads.
#include "launcher/coordinator/snapshot_index.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>

namespace ds {
namespace {

const std::string kRun = "6b0735a0aa";  // this run
const std::string kEarlier = "6b0735000b";  // an earlier run

// A fake digest per (step, run, world, tag): one save.
std::string Set(int64_t step, const std::string& run, uint32_t world, int tag = 0) {
  return fmt::format("{:016x}", std::hash<std::string>()(fmt::format("{} {} {} {}", step, run, world, tag)));
}
msg::SnapshotId Id(int64_t step, uint32_t world, const std::string& run = kRun, const std::string& config = "c0",
                   int tag = 0) {
  return msg::SnapshotId{run, world, 1, config, Set(step, run, world, tag)};
}
msg::ShardEntry E(int64_t step, uint32_t shard, uint32_t world, uint32_t origin, uint8_t tier = 1) {
  return msg::ShardEntry{step, shard, Id(step, world), origin, tier, 100};
}
msg::ShardEntry E(int64_t step, uint32_t shard, const msg::SnapshotId& id, uint32_t origin, uint8_t tier = 2) {
  return msg::ShardEntry{step, shard, id, origin, tier, 100};
}
msg::SnapshotHeld Added(std::vector<msg::ShardEntry> v) {
  msg::SnapshotHeld m;
  m.added = std::move(v);
  return m;
}
const std::vector<std::string> kHosts = {"w0", "w1", "w2", "w3"};

// Three nodes, one rank each, replicas on the next node (ring): node n holds
// its shard n and a replica of shard n-1.
SnapshotIndex Ring(int64_t step) {
  SnapshotIndex idx;
  for (uint32_t n = 0; n < 3; ++n) idx.Apply(static_cast<int>(n), Added({E(step, n, 3, n), E(step, (n + 2) % 3, 3, (n + 2) % 3)}));
  return idx;
}

TEST_CASE("snapshot index: the newest step every shard of which a living node holds", "[snapshots]") {
  SnapshotIndex idx = Ring(400);
  for (uint32_t n = 0; n < 3; ++n) idx.Apply(static_cast<int>(n), Added({E(500, n, 3, n)}));  // 500 not replicated yet
  auto all = idx.Decide({true, true, true}, kRun);
  CHECK(all.step == 500);
  CHECK(all.id.world == 3);
  CHECK_FALSE(all.earlier_run);
  CHECK(all.newest == -1);
  // Node 2 lost: 500 lacks shard 2, 400 has it on node 0 (the replica of node 2's shard).
  idx.Forget(2);
  auto c = idx.Decide({true, true, false}, kRun);
  REQUIRE(c.step == 400);
  REQUIRE(c.picks.size() == 3);
  CHECK(c.picks[0].holder == 0);  // own memory preferred
  CHECK(c.picks[1].holder == 1);
  CHECK(c.picks[2].holder == 0);
  CHECK(c.picks[2].origin == 2);
  CHECK(c.newest == 500);
  CHECK(c.newest_missing == std::vector<uint32_t>{2});
  CHECK(DescribeRecovery(c, kHosts) ==
        "resuming from step 400: 2 shards from memory, 1 from w0's replica of w2; "
        "step 500 lost shard 2 with the failed nodes, so an older step");
}

TEST_CASE("snapshot index: memory beats disk, and a step only on disks is taken when nothing newer is whole",
          "[snapshots]") {
  SnapshotIndex idx;
  idx.Apply(0, Added({E(300, 0, 2, 0, 2), E(300, 1, 2, 1, 2), E(300, 0, 2, 0, 1)}));
  auto c = idx.Decide({true}, kRun);
  REQUIRE(c.step == 300);
  CHECK(c.picks[0].tier == 1);
  CHECK(c.picks[1].tier == 2);
  CHECK(c.from_disk);
  CHECK(DescribeRecovery(c, kHosts) == "resuming from step 300: 1 shard from memory, 1 from w0's disk");
}

TEST_CASE("snapshot index: two buddies lost at once with one replica falls back, or starts fresh", "[snapshots]") {
  // Four nodes, ring replicas: shard n on n and n+1. Nodes 1 and 2 lost: shard 1 is gone.
  SnapshotIndex idx;
  for (uint32_t n = 0; n < 4; ++n)
    idx.Apply(static_cast<int>(n), Added({E(600, n, 4, n), E(600, (n + 3) % 4, 4, (n + 3) % 4)}));
  idx.Apply(3, Added({E(200, 0, 4, 0, 2), E(200, 1, 4, 1, 2), E(200, 2, 4, 2, 2), E(200, 3, 4, 3, 2)}));
  idx.Forget(1);
  idx.Forget(2);
  auto c = idx.Decide({true, false, false, true}, kRun);
  CHECK(c.step == 200);
  CHECK(c.newest == 600);
  CHECK(c.newest_missing == std::vector<uint32_t>{1});
  CHECK(DescribeRecovery(c, kHosts) ==
        "resuming from step 200: 4 shards from w3's disk; step 600 lost shard 1 with the failed nodes, "
        "so an older step from disk");
  // Without the disk copy nothing is whole: from scratch, said before starting.
  SnapshotIndex bare;
  for (uint32_t n = 0; n < 4; ++n)
    bare.Apply(static_cast<int>(n), Added({E(600, n, 4, n), E(600, (n + 3) % 4, 4, (n + 3) % 4)}));
  bare.Forget(1);
  bare.Forget(2);
  auto none = bare.Decide({true, false, false, true}, kRun);
  CHECK(none.step == -1);
  CHECK(DescribeRecovery(none, kHosts) ==
        "no complete snapshot or checkpoint left: starting from scratch (step 600 lost shard 1 with the failed "
        "nodes)");
  CHECK(DescribeRecovery(SnapshotIndex().Decide({true}, kRun), kHosts) ==
        "no snapshot or checkpoint held by any node: starting from scratch");
}

TEST_CASE("snapshot index: removals, dead nodes and excluded steps are not chosen", "[snapshots]") {
  SnapshotIndex idx;
  idx.Apply(0, Added({E(100, 0, 1, 0), E(200, 0, 1, 0)}));
  msg::SnapshotHeld removed;
  removed.removed = {E(200, 0, 1, 0)};
  idx.Apply(0, removed);
  CHECK(idx.Decide({true}, kRun).step == 100);
  CHECK(idx.Decide({false}, kRun).step == -1);
  CHECK(idx.Decide({true}, kRun, {{100, Set(100, kRun, 1)}}).step == -1);
  idx.Apply(1, Added({E(100, 0, 1, 0, 1)}));
  auto c = idx.Decide({false, true}, kRun);
  CHECK(c.step == 100);
  CHECK(c.picks[0].holder == 1);
}

TEST_CASE("snapshot index: shards of one step from different worlds or runs never complete it",
          "[snapshots]") {
  // A 2-node run's shard 1 on node 1's disk, and a 1-node run's shard 0 of
  // the same step on node 0's disk: the third run must not see a step 10.
  SnapshotIndex idx;
  const msg::SnapshotId two = Id(10, 2, "6b000001"), one = Id(10, 1, "6b000002");
  idx.Apply(0, Added({E(10, 0, one, 0)}));
  idx.Apply(1, Added({E(10, 1, two, 1)}));
  auto c = idx.Decide({true, true}, kRun);
  REQUIRE(c.step == 10);  // the 1-node run's save is whole on node 0 ...
  CHECK(c.id == one);
  REQUIRE(c.picks.size() == 1);  // ... and only its shard is taken
  CHECK(c.picks[0].holder == 0);
  CHECK(DescribeRecovery(c, kHosts) ==
        "resuming from step 10 of an earlier run (6b000002, 1 rank at ZeRO stage 1): 1 shard from w0's disk");
  CHECK(c.kept_saves == 1);
  CHECK(DescribeKept(c) == "keeping 1 saved step of 1 earlier run in the nodes' checkpoint directories: this run "
                           "never prunes or overwrites them");
  // Without it nothing is whole: the 2-node run's step lacks shard 0.
  auto none = idx.Decide({false, true}, kRun);
  CHECK(none.step == -1);
  CHECK(none.picks.empty());
  CHECK(DescribeRecovery(none, kHosts) ==
        "no complete snapshot or checkpoint left: starting from scratch (step 10 of an earlier run lacks shard 0, "
        "on no node of this run)");

  // Within one run: two saves of step 20 (a timeline a restart abandoned,
  // and the one after it), one shard of each left: step 10 it is.
  SnapshotIndex run;
  run.Apply(0, Added({E(10, 0, 2, 0), E(20, 0, Id(20, 2, kRun, "c0", 0), 0)}));
  run.Apply(1, Added({E(10, 1, 2, 1), E(20, 1, Id(20, 2, kRun, "c0", 1), 1)}));
  auto t = run.Decide({true, true}, kRun);
  CHECK(t.step == 10);
  CHECK(t.newest == 20);
}

TEST_CASE("snapshot index: this run's saves first, then an earlier run's of its config, the later run's first",
          "[snapshots]") {
  SnapshotIndex idx;
  const msg::SnapshotId a = Id(500, 1, "6b000001", "c0"), b = Id(500, 1, "6b000002", "c0"),
                        other = Id(900, 1, "6b000003", "c9");
  idx.Apply(0, Added({E(500, 0, a, 0), E(500, 0, b, 0), E(900, 0, other, 0)}));
  // Before this run saved anything, any config: the workers check it.
  auto first = idx.Decide({true}, kRun);
  CHECK(first.step == 900);
  CHECK(first.id == other);
  CHECK(first.earlier_run);
  CHECK(first.kept_saves == 2);
  CHECK(first.kept_runs == 2);
  // This run's config is c0 once it saved something: c9 is out; of the two
  // saves of step 500 the later run's (its id sorts after) wins.
  idx.Apply(0, Added({E(100, 0, Id(100, 1, kRun, "c0"), 0, 1)}));
  idx.Apply(0, msg::SnapshotHeld{{}, {E(100, 0, Id(100, 1, kRun, "c0"), 0, 1)}, {}});
  auto later = idx.Decide({true}, kRun);
  CHECK(later.step == 500);
  CHECK(later.id == b);
  CHECK(later.newest == -1);
  CHECK(DescribeRecovery(later, kHosts) ==
        "resuming from step 500 of an earlier run (6b000002, 1 rank at ZeRO stage 1): 1 shard from w0's disk");
  // A whole save of this run's own beats any earlier run's, newer or not.
  idx.Apply(0, Added({E(200, 0, Id(200, 1, kRun, "c0"), 0, 1)}));
  auto own = idx.Decide({true}, kRun);
  CHECK(own.step == 200);
  CHECK_FALSE(own.earlier_run);
  CHECK(own.kept_saves == 3);
  CHECK(DescribeRecovery(own, kHosts) == "resuming from step 200: 1 shard from memory");
}

}  // namespace
}  // namespace ds
