// StackCollection (stack_collection.h) alone: only the agents asked, once
// each, for this generation; complete when the last owed answer arrived;
// every rank in the result, with its stacks or why there are none.
#include "launcher/coordinator/stack_collection.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

msg::Stacks StacksOf(uint32_t generation, std::vector<int> ranks) {
  msg::Stacks m;
  m.generation = generation;
  for (int r : ranks) m.ranks.push_back({r, 100 + r, "gdb", "#0 frame of rank " + std::to_string(r)});
  return m;
}

TEST_CASE("stack collection: the agents asked answer once each, for their generation; then complete", "[unit]") {
  StackCollection c;
  CHECK_FALSE(c.active());
  const Clock::time_point t0{std::chrono::hours(1)};
  c.Begin("rank 3 made no step for 120 s", 1, 4, t0, {0, 1});
  CHECK(c.active());
  CHECK(c.deadline() == t0 + std::chrono::seconds(10));
  CHECK(c.culprit() == 1);
  CHECK_FALSE(c.OnStacks(2, StacksOf(4, {4})));  // not asked
  CHECK_FALSE(c.OnStacks(0, StacksOf(3, {0})));  // an older generation's
  CHECK_FALSE(c.OnStacks(0, StacksOf(4, {0, 1})));
  CHECK_FALSE(c.OnStacks(0, StacksOf(4, {0, 1})));  // twice: still waiting for node 1
  CHECK(c.OnStacks(1, StacksOf(4, {2})));

  JobRecord record;
  for (int r = 0; r < 4; ++r) record.OnAssigned(r, r / 2, r < 2 ? "w0" : "w1");
  RankProgressView progress;
  const std::vector<HangStack> got = c.Finish(record, progress);
  CHECK_FALSE(c.active());
  REQUIRE(got.size() == 4);
  CHECK(got[0].text == "#0 frame of rank 0");
  CHECK(got[2].tool == "gdb");
  CHECK(got[3].tool.empty());  // rank 3's agent answered without it
  CHECK(got[3].text == "no answer from w1 within 10 s");
}

TEST_CASE("stack collection: nobody asked is complete at once; Clear ends it", "[unit]") {
  StackCollection c;
  c.Begin("hung", -1, 0, Clock::time_point{}, {});
  CHECK(c.complete());
  c.Clear();
  CHECK_FALSE(c.active());
  CHECK(c.why().empty());
}

}  // namespace
}  // namespace ds
