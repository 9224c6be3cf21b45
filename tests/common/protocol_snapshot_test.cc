// The snapshot messages (common/protocol.h, wire_format.md "Snapshots"):
// round trips of every field, and every truncation refused.
#include <catch2/catch.hpp>

#include "common/protocol.h"
#include "tests/common/truncations.h"

namespace ds::msg {
namespace {

ShardEntry Entry() { return ShardEntry{123456789012, 7, 9, 4, 2, (uint64_t{1} << 40) + 5}; }

TEST_CASE("protocol: the snapshot messages round-trip every field", "[protocol][snapshots]") {
  SnapshotHeld held;
  held.added = {Entry(), ShardEntry{1, 0, 1, 0, 1, 0}};
  held.removed = {Entry()};
  held.counters = {1, 2, 3, 4, 5, 6};
  auto h = SnapshotHeld::Decode(held.Encode());
  REQUIRE(h.ok());
  REQUIRE(h->added.size() == 2);
  CHECK(h->added[0].step == 123456789012);
  CHECK(h->added[0].shard == 7);
  CHECK(h->added[0].world == 9);
  CHECK(h->added[0].origin == 4);
  CHECK(h->added[0].tier == 2);
  CHECK(h->added[0].bytes == (uint64_t{1} << 40) + 5);
  CHECK(h->removed.size() == 1);
  CHECK(h->counters.persist_micros == 6);
  CHECK(h->counters.handoffs == 1);

  auto f = Fetch::Decode(Fetch{3, -1, {{2, 5, "10.0.0.6:4000"}}}.Encode());
  REQUIRE(f.ok());
  CHECK(f->step == -1);
  REQUIRE(f->sources.size() == 1);
  CHECK(f->sources[0].peer_addr == "10.0.0.6:4000");
  auto d = Fetched::Decode(Fetched{3, 400, 1 << 20, 900, "fetching shard 1: refused"}.Encode());
  REQUIRE(d.ok());
  CHECK(d->error == "fetching shard 1: refused");
  auto put = ShardPut::Decode(ShardPut{Entry(), 0xdeadbeef, "{\"step\": 1}"}.Encode());
  REQUIRE(put.ok());
  CHECK(put->crc32 == 0xdeadbeef);
  CHECK(put->entry.bytes == Entry().bytes);
  auto r = Replicate::Decode(Replicate{2, {{1, "a:1"}, {2, "b:2"}}}.Encode());
  REQUIRE(r.ok());
  CHECK(r->targets[1].peer_addr == "b:2");
  auto s = SnapshotSetup::Decode(SnapshotSetup{"/l/w0", 3, "key"}.Encode());
  REQUIRE(s.ok());
  CHECK(s->keep == 3);
}

TEST_CASE("protocol: every truncation of a snapshot message is refused, trailing bytes too", "[protocol][snapshots]") {
  SnapshotHeld held;
  held.added = {Entry()};
  CheckTruncations(held);
  CheckTruncations(Fetch{3, 400, {{2, 5, "10.0.0.6:4000"}}});
  CheckTruncations(Fetched{3, 400, 10, 9, "e"});
  CheckTruncations(ShardPut{Entry(), 1, "m"});
  CheckTruncations(ShardGet{400, 2});
  CheckTruncations(Replicate{2, {{1, "a:1"}}});
  CheckTruncations(SnapshotSetup{"/d", 2, "k"});
  CheckTruncations(SnapshotReady{"a:1", "/dev/shm/x", ""});
}

}  // namespace
}  // namespace ds::msg
