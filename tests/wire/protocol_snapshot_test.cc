// The snapshot messages (wire/protocol.h, wire_format.md "Snapshots"):
// round trips of every field, every truncation refused, and an identity
// that could not name a directory refused at decoding.
#include <catch2/catch.hpp>

#include "tests/wire/truncations.h"
#include "wire/protocol.h"

namespace ds::msg {
namespace {

SnapshotId Id() { return SnapshotId{"6b0735a0c0ffee00", 9, 2, "0badf00d", "0123456789abcdef"}; }
ShardEntry Entry() { return ShardEntry{123456789012, 7, Id(), 4, 2, (uint64_t{1} << 40) + 5}; }

TEST_CASE("protocol: the snapshot messages round-trip every field", "[protocol][snapshots]") {
  SnapshotHeld held;
  held.added = {Entry(), ShardEntry{1, 0, SnapshotId{"a", 1, 0, "1", "fedcba9876543210"}, 0, 1, 0}};
  held.removed = {Entry()};
  held.counters = {1, 2, 3, 4, 5, 6, 7, 8};
  auto h = SnapshotHeld::Decode(held.Encode());
  REQUIRE(h.ok());
  REQUIRE(h->added.size() == 2);
  CHECK(h->added[0].step == 123456789012);
  CHECK(h->added[0].shard == 7);
  CHECK(h->added[0].id == Id());
  CHECK(h->added[0].id.world == 9);
  CHECK(h->added[0].id.zero_stage == 2);
  CHECK(h->added[0].origin == 4);
  CHECK(h->added[0].tier == 2);
  CHECK(h->added[0].bytes == (uint64_t{1} << 40) + 5);
  CHECK(h->added[1].id.run == "a");
  CHECK(h->removed.size() == 1);
  CHECK(h->counters.persist_micros == 6);
  CHECK(h->counters.budget_wait_micros == 7);
  CHECK(h->counters.cpu_micros == 8);
  CHECK(h->counters.handoffs == 1);

  auto f = Fetch::Decode(Fetch{3, 400, Id(), {{2, 5, "10.0.0.6:4000"}}}.Encode());
  REQUIRE(f.ok());
  CHECK(f->id == Id());
  REQUIRE(f->sources.size() == 1);
  CHECK(f->sources[0].peer_addr == "10.0.0.6:4000");
  auto fresh = Fetch::Decode(Fetch{3, -1, {}, {}}.Encode());
  REQUIRE(fresh.ok());  // a fresh start names no save
  CHECK(fresh->step == -1);
  auto d = Fetched::Decode(Fetched{3, 400, "0123456789abcdef", 1 << 20, 900, "fetching shard 1: refused"}.Encode());
  REQUIRE(d.ok());
  CHECK(d->set == "0123456789abcdef");
  CHECK(d->error == "fetching shard 1: refused");
  auto put = ShardPut::Decode(ShardPut{Entry(), 0xdeadbeef, "{\"step\": 1}"}.Encode());
  REQUIRE(put.ok());
  CHECK(put->crc32 == 0xdeadbeef);
  CHECK(put->entry.bytes == Entry().bytes);
  CHECK(put->entry.id == Id());
  auto get = ShardGet::Decode(ShardGet{400, "0123456789abcdef", 2}.Encode());
  REQUIRE(get.ok());
  CHECK(get->set == "0123456789abcdef");
  CHECK(get->shard == 2);
  auto r = Replicate::Decode(Replicate{2, {{1, "a:1"}, {2, "b:2"}}, {"a:1", "b:2", "c:3"}}.Encode());
  REQUIRE(r.ok());
  CHECK(r->targets[1].peer_addr == "b:2");
  CHECK(r->peers == std::vector<std::string>{"a:1", "b:2", "c:3"});
  auto s = SnapshotSetup::Decode(SnapshotSetup{"/l/w0", 3, "key", "6b0735a0c0ffee00"}.Encode());
  REQUIRE(s.ok());
  CHECK(s->keep == 3);
  CHECK(s->run_id == "6b0735a0c0ffee00");
  const SaveRef point{400, "0123456789abcdef"}, secure{500, "fedcba9876543210"};
  auto plan = SnapshotPlan::Decode(SnapshotPlan{510, {point, secure}, secure, {point}}.Encode());
  REQUIRE(plan.ok());
  CHECK(plan->drop == std::vector<SaveRef>{point});
  CHECK(plan->complete == 510);
  CHECK(plan->protect == std::vector<SaveRef>{point, secure});
  CHECK(plan->secure == secure);
  CHECK(SnapshotPlan::Decode(SnapshotPlan{}.Encode())->secure.step == -1);  // nothing to secure yet
}

TEST_CASE("protocol: a plan naming a save that could not name a directory is refused", "[protocol][snapshots]") {
  auto bad = SnapshotPlan::Decode(SnapshotPlan{5, {{5, "../../etc"}}, {}}.Encode());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "SnapshotPlan payload: step 5 with set '../../etc' (expected 16 hex digits, or none for step -1)");
  CHECK_FALSE(SnapshotPlan::Decode(SnapshotPlan{5, {}, {-1, "0123456789abcdef"}}.Encode()).ok());
}

TEST_CASE("protocol: every truncation of a snapshot message is refused, trailing bytes too", "[protocol][snapshots]") {
  SnapshotHeld held;
  held.added = {Entry()};
  CheckTruncations(held);
  CheckTruncations(Fetch{3, 400, Id(), {{2, 5, "10.0.0.6:4000"}}});
  CheckTruncations(Fetched{3, 400, "0123456789abcdef", 10, 9, "e"});
  CheckTruncations(ShardPut{Entry(), 1, "m"});
  CheckTruncations(ShardGet{400, "0123456789abcdef", 2});
  CheckTruncations(Replicate{2, {{1, "a:1"}}, {"a:1"}});
  CheckTruncations(SnapshotSetup{"/d", 2, "k", "ab"});
  CheckTruncations(SnapshotReady{"a:1", "/dev/shm/x", ""});
  CheckTruncations(SnapshotPlan{510, {{400, "0123456789abcdef"}}, {400, "0123456789abcdef"}, {{300, "0123456789abcdef"}}});
}

TEST_CASE("protocol: a save's identity that could not name a directory is refused at decoding", "[protocol][snapshots]") {
  for (SnapshotId bad : {SnapshotId{"../x", 2, 0, "1", "0123456789abcdef"},
                         SnapshotId{"a", 2, 0, "1", "../../etc/passw"},
                         SnapshotId{"a", 2, 0, "1/2", "0123456789abcdef"},
                         SnapshotId{"", 2, 0, "1", "0123456789abcdef"},
                         SnapshotId{"a", 0, 0, "1", "0123456789abcdef"},
                         SnapshotId{"a", 2, 4, "1", "0123456789abcdef"},
                         SnapshotId{"a", 2, 0, "1", "0123456789ABCDEF"}}) {
    SnapshotHeld held;
    held.added = {ShardEntry{10, 0, bad, 0, 1, 5}};
    INFO(bad.run << " " << bad.world << " " << int(bad.zero_stage) << " " << bad.config << " " << bad.set);
    CHECK_FALSE(SnapshotHeld::Decode(held.Encode()).ok());
    CHECK_FALSE(ShardPut::Decode(ShardPut{held.added[0], 1, "m"}.Encode()).ok());
    CHECK_FALSE(Fetch::Decode(Fetch{1, 10, bad, {}}.Encode()).ok());
  }
  SnapshotHeld beyond;  // a shard outside its save's world
  beyond.added = {ShardEntry{10, 2, SnapshotId{"a", 2, 0, "1", "0123456789abcdef"}, 0, 1, 5}};
  CHECK(SnapshotHeld::Decode(beyond.Encode()).status().message() == "SnapshotHeld payload: shard 2 of a world of 2");
  CHECK(ShardGet::Decode(ShardGet{10, "../x", 0}.Encode()).status().message() ==
        "ShardGet payload: not a set digest");
}

}  // namespace
}  // namespace ds::msg
