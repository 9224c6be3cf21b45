// RecoveryPoint (launcher/coordinator/recovery_point.h): the newest save on
// enough nodes, the one save secured at a time (whole saves skipped alike),
// what agents may drop, and the steps a loss would cost.
#include "launcher/coordinator/recovery_point.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>

namespace ds {
namespace {

const std::string kRun = "6b0735a0aa";

std::string Set(int64_t step, int tag = 0) {
  return fmt::format("{:016x}", std::hash<std::string>()(fmt::format("{} {}", step, tag)));
}
msg::ShardEntry E(int64_t step, uint32_t shard, uint32_t origin, uint8_t tier = 1, const std::string& run = kRun) {
  return msg::ShardEntry{step, shard, msg::SnapshotId{run, 3, 1, "c0", Set(step)}, origin, tier, 100};
}
msg::SnapshotHeld Added(std::vector<msg::ShardEntry> v) {
  msg::SnapshotHeld m;
  m.added = std::move(v);
  return m;
}
msg::SnapshotHeld Removed(std::vector<msg::ShardEntry> v) {
  msg::SnapshotHeld m;
  m.removed = std::move(v);
  return m;
}
msg::SaveRef Ref(int64_t step) { return {step, Set(step)}; }

// Three nodes, one rank each, one replica (2 copies make a save recoverable).
RecoveryPoint Three(bool on_disk = false) {
  RecoveryPoint p(kRun, on_disk);
  p.NewGeneration(2, -1);
  return p;
}
// Every rank hands `step` over to its own agent.
void Handed(RecoveryPoint& p, int64_t step) {
  for (uint32_t n = 0; n < 3; ++n) p.Apply(static_cast<int>(n), Added({E(step, n, n)}));
}
// Every node's replica of `step` reaches the next node.
void Replicated(RecoveryPoint& p, int64_t step) {
  for (uint32_t n = 0; n < 3; ++n) p.Apply(static_cast<int>((n + 1) % 3), Added({E(step, n, n)}));
}

TEST_CASE("recovery point: a handed-over save is complete, and recoverable once every shard is on two nodes",
          "[snapshots]") {
  RecoveryPoint p = Three();
  CHECK(p.Update());
  CHECK(p.plan().complete == -1);
  CHECK(p.plan().protect.empty());
  CHECK(p.plan().secure.step == -1);
  Handed(p, 10);
  REQUIRE(p.Update());
  CHECK(p.point().step == -1);
  CHECK(p.plan().complete == 10);
  CHECK(p.plan().secure == Ref(10));
  CHECK(p.plan().protect == std::vector<msg::SaveRef>{Ref(10)});
  Replicated(p, 10);
  REQUIRE(p.Update());
  CHECK(p.point() == Ref(10));
  CHECK(p.plan().secure.step == -1);
  CHECK(p.plan().protect == std::vector<msg::SaveRef>{Ref(10)});
  CHECK_FALSE(p.Update());  // nothing changed: nothing to send
}

TEST_CASE("recovery point: while one save is secured, newer ones are skipped whole and the point stays protected",
          "[snapshots]") {
  RecoveryPoint p = Three();
  Handed(p, 10);
  Replicated(p, 10);
  p.Update();
  Handed(p, 20);
  p.Update();
  CHECK(p.plan().secure == Ref(20));
  // 30 and 40 come while 20's replicas are on their way: 20 stays the one secured.
  Handed(p, 30);
  Handed(p, 40);
  p.Update();
  CHECK(p.plan().secure == Ref(20));
  CHECK(p.plan().complete == 40);
  CHECK(p.plan().protect == (std::vector<msg::SaveRef>{Ref(10), Ref(20)}));
  // A shard replicated by one node only does not make 20 recoverable.
  p.Apply(1, Added({E(20, 0, 0)}));
  p.Update();
  CHECK(p.point() == Ref(10));
  p.Apply(2, Added({E(20, 1, 1)}));
  p.Apply(0, Added({E(20, 2, 2)}));
  p.Update();
  CHECK(p.point() == Ref(20));
  CHECK(p.plan().secure == Ref(40));  // the newest complete one next, 30 skipped on every node alike
  CHECK(p.plan().protect == (std::vector<msg::SaveRef>{Ref(20), Ref(40)}));
}

TEST_CASE("recovery point: a node loss leaves the point where it was while copies of it are left", "[snapshots]") {
  RecoveryPoint p = Three();
  Handed(p, 10);
  Replicated(p, 10);
  Handed(p, 20);
  p.Update();
  p.Forget(2);  // shard 2 of 10 is left on node 0 only, of 20 nowhere
  p.Update();
  CHECK(p.point() == Ref(10));  // short of copies, still the point and still protected
  CHECK(p.plan().protect == std::vector<msg::SaveRef>{Ref(10)});
  CHECK(p.plan().secure.step == -1);  // 20 can no longer be secured
  CHECK(p.plan().complete == 10);
  // The next generation (two nodes, both hold every shard of 10 after the gather).
  p.NewGeneration(2, 10);
  p.Apply(0, Added({E(10, 1, 1)}));
  p.Apply(1, Added({E(10, 2, 2)}));
  p.Update();
  CHECK(p.point() == Ref(10));
}

TEST_CASE("recovery point: a generation resumed from an older step abandons the newer saves, point included",
          "[snapshots]") {
  RecoveryPoint p = Three();
  Handed(p, 10);
  Replicated(p, 10);
  Handed(p, 20);
  Replicated(p, 20);
  p.Update();
  REQUIRE(p.point() == Ref(20));
  p.NewGeneration(2, 10);  // a gather of 20 failed: 10 is tried; nothing is dropped yet
  p.Update();
  CHECK(p.point() == Ref(20));
  CHECK(p.plan().drop.empty());
  p.Resumed(10);  // the generation started from 10: 20's timeline is over
  p.Update();
  CHECK(p.point() == Ref(10));
  CHECK(p.plan().drop == std::vector<msg::SaveRef>{Ref(20)});
  CHECK(p.plan().protect == std::vector<msg::SaveRef>{Ref(10)});
  Handed(p, 30);
  p.Update();
  CHECK(p.plan().drop.empty());  // said once
}

TEST_CASE("recovery point: a save a writer dropped before it was secured is given up for a newer one",
          "[snapshots]") {
  RecoveryPoint p = Three();
  Handed(p, 10);
  p.Update();
  CHECK(p.plan().secure == Ref(10));
  Handed(p, 20);
  p.Apply(1, Removed({E(10, 1, 1)}));  // pruned before the plan reached it
  p.Update();
  CHECK(p.plan().secure == Ref(20));
  CHECK(p.plan().complete == 20);
}

TEST_CASE("recovery point: with one copy enough and a checkpoint directory, the disks secure the saves",
          "[snapshots]") {
  RecoveryPoint p(kRun, /*on_disk=*/true);
  p.NewGeneration(1, -1);
  Handed(p, 10);
  p.Update();
  CHECK(p.point() == Ref(10));      // in memory on one node is enough
  CHECK(p.plan().secure == Ref(10));  // but the disks have not got it
  for (uint32_t n = 0; n < 3; ++n) p.Apply(static_cast<int>(n), Added({E(10, n, n, 2)}));
  p.Update();
  CHECK(p.plan().secure.step == -1);
}

TEST_CASE("recovery point: earlier runs' saves are not this run's point", "[snapshots]") {
  RecoveryPoint p = Three();
  for (uint32_t n = 0; n < 3; ++n)
    p.Apply(static_cast<int>(n), Added({E(90, n, n, 2, "6b07350000"), E(90, (n + 2) % 3, (n + 2) % 3, 2, "6b07350000")}));
  p.Update();
  CHECK(p.point().step == -1);
  CHECK(p.plan().complete == -1);
}

TEST_CASE("recovery point: steps at risk, the worst of them, and the cadence the replicas kept up with",
          "[snapshots]") {
  RecoveryPoint p = Three();
  p.NoteProgress(7);
  CHECK(p.figures().steps_at_risk == 7);  // nothing recoverable yet: since the start
  for (int64_t step = 10; step <= 200; step += 10) {
    Handed(p, step);
    p.Update();
    p.NoteProgress(step + 5);
    if (step % 50 == 0) {  // the replicas keep up with one save in five
      Replicated(p, p.plan().secure.step);
      p.Update();
    }
  }
  const RecoveryFigures f = p.figures();
  CHECK(f.point == 150);  // secured: 10 (done at 50), then 50, 100, 150: the newest complete each time
  CHECK(f.steps_at_risk == 205 - 150);
  CHECK(f.secured_saves == 4);
  CHECK(f.secured_every == (150 - 10) / 3);
  CHECK(f.worst_at_risk >= f.steps_at_risk);
  CHECK(f.complete_saves == 20);
  CHECK(f.asked_every == 10);
  CHECK(p.DescribeCadence() == "snapshots every 10 steps asked; replicas kept up with one in 5 (every 46 steps)");
}

}  // namespace
}  // namespace ds
