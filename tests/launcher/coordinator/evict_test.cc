// Evictions (evict.h) on made-up steps and times: the boundary is the first
// step newer than the mark's that every node of the generation handed over;
// an evicted node is masked out of the candidates for its cooldown, never
// below min_nodes; marks can be dropped; off marks nothing.
#include <catch2/catch.hpp>

#include "launcher/coordinator/evict.h"

namespace ds {
namespace {

const Clock::time_point kT0{std::chrono::hours(1)};

TEST_CASE("evict: the boundary is a newer step every node of the generation handed over", "[evict]") {
  Evictions e(true, 60);
  const std::vector<int> gen = {0, 1, 2};
  CHECK_FALSE(e.OnHeld(0, {100}, gen));  // nothing marked
  CHECK_FALSE(e.OnHeld(1, {100}, gen));
  REQUIRE(e.Mark(2));
  CHECK_FALSE(e.Mark(2));  // once
  CHECK_FALSE(e.OnHeld(2, {100}, gen));
  CHECK_FALSE(e.OnHeld(0, {200}, gen));
  CHECK_FALSE(e.OnHeld(1, {200}, gen));
  CHECK(e.OnHeld(2, {200}, gen));
  CHECK(e.newest_step() == 200);
  CHECK(e.Evict(kT0) == std::vector<uint32_t>{2});
  CHECK_FALSE(e.pending());
}

TEST_CASE("evict: an evicted node sits out its cooldown, never below min_nodes", "[evict]") {
  Evictions e(true, 60);
  e.Mark(1);
  e.Evict(kT0);
  std::vector<bool> alive = {true, true, true};
  e.Apply(alive, 1, kT0 + std::chrono::seconds(59));
  CHECK(alive == std::vector<bool>{true, false, true});
  alive = {true, true, true};
  e.Apply(alive, 1, kT0 + std::chrono::seconds(60));
  CHECK(alive == std::vector<bool>{true, true, true});
  alive = {true, true, false};
  e.Apply(alive, 2, kT0);
  CHECK(alive == std::vector<bool>{true, true, false});  // min_nodes needs it
}

TEST_CASE("evict: marks are dropped on request; off marks nothing", "[evict]") {
  Evictions e(true, 60);
  e.Mark(1);
  e.ClearMarks();
  CHECK_FALSE(e.pending());
  Evictions off(false, 60);
  CHECK_FALSE(off.Mark(1));
}

}  // namespace
}  // namespace ds
