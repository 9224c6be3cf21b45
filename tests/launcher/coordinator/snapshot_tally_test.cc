// SnapshotTally: per node the newest step held (memory or disk) and bytes
// held, saves counted once each, totals that survive an agent's restart.
#include "launcher/coordinator/snapshot_tally.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

msg::ShardEntry E(int64_t step, uint32_t shard, uint32_t origin, uint8_t tier = 1, uint64_t bytes = 100) {
  return msg::ShardEntry{step, shard, msg::SnapshotId{"run1", 2, 0, "c0", "set" + std::to_string(step)}, origin, tier,
                         bytes};
}

msg::SnapshotHeld Held(std::vector<msg::ShardEntry> added, std::vector<msg::ShardEntry> removed = {},
                       uint64_t handoff_bytes = 0) {
  msg::SnapshotHeld m;
  m.added = std::move(added);
  m.removed = std::move(removed);
  m.counters.handoff_bytes = handoff_bytes;
  return m;
}

TEST_CASE("snapshot tally: a save counts once, when its shard 0 reaches its writer's agent", "[snapshot_tally]") {
  SnapshotTally t(2);
  CHECK(t.saves() == 0);
  CHECK(t.newest_step() == -1);
  t.OnHeld(0, Held({E(10, 0, 0), E(10, 1, 1)}));  // node 0: its own shard 0, node 1's shard 1 as a replica
  t.OnHeld(1, Held({E(10, 1, 1), E(10, 0, 0)}));  // node 1: shard 0 is node 0's replica: not a save
  CHECK(t.saves() == 1);
  t.OnHeld(0, Held({E(10, 0, 0, 2)}));            // the same shard persisted to disk: not a save
  t.OnHeld(0, Held({E(10, 0, 0)}));               // reported again: not a new save
  CHECK(t.saves() == 1);
  t.OnHeld(0, Held({E(20, 0, 0)}));
  CHECK(t.saves() == 2);
  CHECK(t.newest_step() == 20);
}

TEST_CASE("snapshot tally: per node the newest step held, in memory or on disk only, and its bytes", "[snapshot_tally]") {
  SnapshotTally t(2);
  t.OnHeld(0, Held({E(10, 0, 0, 1, 100), E(10, 0, 0, 2, 100), E(20, 0, 0, 1, 300)}));
  NodeSnapshotFigures n = t.Node(0);
  CHECK(n.newest_step == 20);
  CHECK(n.newest_in_memory);
  CHECK(n.bytes_held == 500);
  t.OnHeld(0, Held({E(20, 0, 0, 2, 300)}, {E(20, 0, 0, 1, 300), E(10, 0, 0, 1, 100)}));  // memory dropped, disk kept
  n = t.Node(0);
  CHECK(n.newest_step == 20);
  CHECK_FALSE(n.newest_in_memory);
  CHECK(n.bytes_held == 400);
  t.OnHeld(0, Held({}, {E(99, 0, 0)}));  // removing what it never held changes nothing
  CHECK(t.Node(0).bytes_held == 400);
  CHECK(t.Node(1).newest_step == -1);
  t.Forget(0);  // lost
  CHECK(t.Node(0).newest_step == -1);
  CHECK(t.Node(0).bytes_held == 0);
  CHECK(t.newest_step() == -1);
  CHECK(t.Node(7).newest_step == -1);  // not a node: nothing
}

TEST_CASE("snapshot tally: totals never go down when a node's agent begins again", "[snapshot_tally]") {
  SnapshotTally t(1);
  t.OnHeld(0, Held({}, {}, 1000));
  t.OnHeld(0, Held({}, {}, 1500));
  CHECK(t.Node(0).totals.handoff_bytes == 1500);
  t.Forget(0);  // lost; a new agent registers and counts from 0
  t.OnHeld(0, Held({}, {}, 200));
  CHECK(t.Node(0).totals.handoff_bytes == 1700);
  t.OnHeld(0, Held({}, {}, 300));
  CHECK(t.Node(0).totals.handoff_bytes == 1800);
}

}  // namespace
}  // namespace ds
