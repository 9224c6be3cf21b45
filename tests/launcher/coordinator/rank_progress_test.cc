// RankProgressView on made-up times: ranks kept in order whatever order the
// agents report in, a newer report replaces the older, node and heard set by
// the view, a new generation forgets everything.
#include <catch2/catch.hpp>

#include "launcher/coordinator/rank_progress.h"

namespace ds {
namespace {

using TimePoint = std::chrono::steady_clock::time_point;
const TimePoint kT0{std::chrono::hours(1)};

RankProgress Rank(int32_t rank, int64_t step, double step_seconds = 0.5) {
  RankProgress r;
  r.rank = rank;
  r.step = step;
  r.step_seconds = step_seconds;
  return r;
}

std::vector<int32_t> RankOrder(const RankProgressView& v) {
  std::vector<int32_t> out;
  for (const auto& r : v.Ranks()) out.push_back(r.rank);
  return out;
}

TEST_CASE("rank progress: ranks sorted across nodes reporting out of order", "[rank_progress]") {
  RankProgressView v;
  v.Update(2, {Rank(5, 10), Rank(4, 10)}, kT0);
  v.Update(0, {Rank(1, 11), Rank(0, 11)}, kT0);
  v.Update(1, {Rank(2, 9), Rank(3, 9)}, kT0);
  CHECK(RankOrder(v) == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK(v.Ranks()[4].node == 2);
  CHECK(v.Ranks()[2].step == 9);
}

TEST_CASE("rank progress: a newer report replaces the rank's entry, node and time set by the view", "[rank_progress]") {
  RankProgressView v;
  RankProgress r = Rank(3, 7, 0.25);
  r.node = 99;  // what the agent claims does not count: the link's node does
  v.Update(1, {r}, kT0);
  v.Update(1, {Rank(3, 8, 0.5)}, kT0 + std::chrono::seconds(1));
  REQUIRE(v.Ranks().size() == 1);
  CHECK(v.Ranks()[0].node == 1);
  CHECK(v.Ranks()[0].step == 8);
  CHECK(v.Ranks()[0].step_seconds == 0.5);
  CHECK(v.Ranks()[0].heard == kT0 + std::chrono::seconds(1));
}

TEST_CASE("rank progress: a new generation forgets every rank", "[rank_progress]") {
  RankProgressView v;
  v.Update(0, {Rank(0, 1), Rank(1, 1)}, kT0);
  v.NewGeneration();
  CHECK(v.Ranks().empty());
  v.Update(0, {Rank(1, 0)}, kT0);
  CHECK(RankOrder(v) == std::vector<int32_t>{1});
}

}  // namespace
}  // namespace ds
