// SnapshotIndex (launcher/coordinator/snapshot_index.h): the recovery
// decision over what the living nodes hold, the holder preferred per shard,
// the fallback to an older or on-disk step, and the words the user reads.
#include "launcher/coordinator/snapshot_index.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

msg::ShardEntry E(int64_t step, uint32_t shard, uint32_t world, uint32_t origin, uint8_t tier = 1) {
  return msg::ShardEntry{step, shard, world, origin, tier, 100};
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
  auto all = idx.Decide({true, true, true});
  CHECK(all.step == 500);
  CHECK(all.world == 3);
  CHECK(all.newest == -1);
  // Node 2 lost: 500 lacks shard 2, 400 has it on node 0 (the replica of node 2's shard).
  idx.Forget(2);
  auto c = idx.Decide({true, true, false});
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
  auto c = idx.Decide({true});
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
  auto c = idx.Decide({true, false, false, true});
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
  auto none = bare.Decide({true, false, false, true});
  CHECK(none.step == -1);
  CHECK(DescribeRecovery(none, kHosts) ==
        "no complete snapshot or checkpoint left: starting from scratch (step 600 lost shard 1 with the failed "
        "nodes)");
  CHECK(DescribeRecovery(SnapshotIndex().Decide({true}), kHosts) ==
        "no snapshot or checkpoint held by any node: starting from scratch");
}

TEST_CASE("snapshot index: removals, dead nodes and excluded steps are not chosen", "[snapshots]") {
  SnapshotIndex idx;
  idx.Apply(0, Added({E(100, 0, 1, 0), E(200, 0, 1, 0)}));
  msg::SnapshotHeld removed;
  removed.removed = {E(200, 0, 1, 0)};
  idx.Apply(0, removed);
  CHECK(idx.Decide({true}).step == 100);
  CHECK(idx.Decide({false}).step == -1);
  CHECK(idx.Decide({true}, {100}).step == -1);
  idx.Apply(1, Added({E(100, 0, 1, 0, 1)}));
  auto c = idx.Decide({false, true});
  CHECK(c.step == 100);
  CHECK(c.picks[0].holder == 1);
}

}  // namespace
}  // namespace ds
