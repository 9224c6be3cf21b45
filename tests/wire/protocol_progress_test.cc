// Progress summaries (wire/protocol.h, wire_format.md "Progress summaries"):
// every field round-trips, unknowns stay -1, every truncation is refused.
#include <catch2/catch.hpp>

#include "tests/wire/truncations.h"
#include "wire/protocol.h"

namespace ds::msg {
namespace {

Progress TwoRanks() {
  Progress p;
  p.generation = 3;
  p.ranks.push_back({6, 1201, 250000, 180000, 256000, 230, 1200, 0.4123, 1000, 0.875});
  p.ranks.push_back({7, -1, 0, -1, -1});
  return p;
}

TEST_CASE("protocol: Progress round-trips every field", "[protocol][progress]") {
  auto p = Progress::Decode(TwoRanks().Encode());
  REQUIRE(p.ok());
  CHECK(p->generation == 3);
  REQUIRE(p->ranks.size() == 2);
  CHECK(p->ranks[0].rank == 6);
  CHECK(p->ranks[0].step == 1201);
  CHECK(p->ranks[0].step_micros == 250000);
  CHECK(p->ranks[0].compute_micros == 180000);
  CHECK(p->ranks[0].samples_milli == 256000);
  CHECK(p->ranks[0].save_stall_micros == 230);
  CHECK(p->ranks[0].loss_step == 1200);
  CHECK(p->ranks[0].loss == 0.4123);
  CHECK(p->ranks[0].accuracy_step == 1000);
  CHECK(p->ranks[0].accuracy == 0.875);
  CHECK(p->ranks[1].save_stall_micros == -1);
  CHECK(p->ranks[1].loss_step == -1);
  CHECK(p->ranks[1].accuracy_step == -1);
  CHECK(p->ranks[1].step == -1);
  CHECK(p->ranks[1].compute_micros == -1);
  CHECK(Progress::Decode(Progress{}.Encode())->ranks.empty());
}

TEST_CASE("protocol: every truncation of Progress is refused, trailing bytes too", "[protocol][progress]") {
  CheckTruncations(TwoRanks());
}

}  // namespace
}  // namespace ds::msg
