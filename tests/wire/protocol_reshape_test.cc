// The in-place recovery messages (wire/protocol.h, wire_format.md
// "In-place recovery"): every field round-trips, every truncation is
// refused, and a Reshape naming a save that could not name a directory is
// refused at decoding.
#include <catch2/catch.hpp>

#include "tests/wire/truncations.h"
#include "wire/protocol.h"

namespace ds::msg {
namespace {

SnapshotId Id() { return SnapshotId{"6b0735a0c0ffee00", 4, 3, "0badf00d", "0123456789abcdef"}; }

Reshape TwoMoves() {
  Reshape m;
  m.generation = 5;
  m.step = 1230;
  m.id = Id();
  m.world = 3;
  m.moves = {{4, 2}, {5, -1}};
  m.sources = {{1, 2, "10.0.0.6:4000"}, {3, 0, "[fd00::1]:4001"}};
  m.deadline_ms = 5000;
  return m;
}

TEST_CASE("protocol: Reshape round-trips every field", "[protocol][reshape]") {
  auto m = Reshape::Decode(TwoMoves().Encode());
  REQUIRE(m.ok());
  CHECK(m->generation == 5);
  CHECK(m->step == 1230);
  CHECK(m->id == Id());
  CHECK(m->world == 3);
  REQUIRE(m->moves.size() == 2);
  CHECK(m->moves[0].old_rank == 4);
  CHECK(m->moves[0].new_rank == 2);
  CHECK(m->moves[1].new_rank == -1);
  REQUIRE(m->sources.size() == 2);
  CHECK(m->sources[1].shard == 3);
  CHECK(m->sources[1].node == 0);
  CHECK(m->sources[1].peer_addr == "[fd00::1]:4001");
  CHECK(m->deadline_ms == 5000);
}

TEST_CASE("protocol: a Reshape whose save could not name a directory is refused", "[protocol][reshape]") {
  Reshape m = TwoMoves();
  m.id.run = "../etc";
  auto d = Reshape::Decode(m.Encode());
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(d.status().message(), Catch::Contains("Reshape"));
}

TEST_CASE("protocol: Reshaped and the worker's frames round-trip every field", "[protocol][reshape]") {
  auto r = Reshaped::Decode(Reshaped{5, {{2, 1, ""}, {3, 0, "rank 3: no snapshot step 1230 in memory"}}, "", 41000}.Encode());
  REQUIRE(r.ok());
  CHECK(r->generation == 5);
  REQUIRE(r->workers.size() == 2);
  CHECK(r->workers[0].rank == 2);
  CHECK(r->workers[0].ok == 1);
  CHECK(r->workers[1].why == "rank 3: no snapshot step 1230 in memory");
  CHECK(r->micros == 41000);
  CHECK(Reshaped::Decode(Reshaped{6, {}, "shard 1: refused", 0}.Encode())->error == "shard 1: refused");

  auto w = WorkerReshape::Decode(WorkerReshape{5, 2, 3, 1230, "0123456789abcdef"}.Encode());
  REQUIRE(w.ok());
  CHECK(w->generation == 5);
  CHECK(w->rank == 2);
  CHECK(w->world == 3);
  CHECK(w->step == 1230);
  CHECK(w->set == "0123456789abcdef");

  auto a = WorkerReshaped::Decode(WorkerReshaped{5, 0, "loading step 1230: crc mismatch", 812}.Encode());
  REQUIRE(a.ok());
  CHECK(a->ok == 0);
  CHECK(a->why == "loading step 1230: crc mismatch");
  CHECK(a->micros == 812);
}

TEST_CASE("protocol: every truncation of the in-place messages is refused", "[protocol][reshape]") {
  CheckTruncations(TwoMoves());
  CheckTruncations(Reshaped{5, {{2, 1, "x"}}, "e", 7});
  CheckTruncations(WorkerReshape{5, 2, 3, 1230, "0123456789abcdef"});
  CheckTruncations(WorkerReshaped{5, 1, "w", 9});
}

}  // namespace
}  // namespace ds::msg
