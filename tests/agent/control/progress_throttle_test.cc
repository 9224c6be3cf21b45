// ProgressThrottle (agent/control/progress_throttle.h) on made-up times: at most one
// update per rank and stream per interval, the newest sent when due.
#include "agent/control/progress_throttle.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using namespace std::chrono_literals;
using TimePoint = ProgressThrottle::TimePoint;

TEST_CASE("ProgressThrottle: the first update goes at once, the next within 50 ms waits and the newest is sent") {
  ProgressThrottle t;
  const TimePoint t0{1h};
  CHECK(t.Offer(0, 2, "1%", t0));
  CHECK_FALSE(t.NextDeadline());
  CHECK_FALSE(t.Offer(0, 2, "2%", t0 + 10ms));
  CHECK_FALSE(t.Offer(0, 2, "3%", t0 + 20ms));
  REQUIRE(t.NextDeadline() == t0 + 50ms);
  CHECK(t.TakeDue(t0 + 49ms).empty());
  auto due = t.TakeDue(t0 + 50ms);
  REQUIRE(due.size() == 1);
  CHECK(due[0].rank == 0);
  CHECK(due[0].stream == 2);
  CHECK(due[0].text == "3%");
  CHECK_FALSE(t.NextDeadline());
  CHECK_FALSE(t.Offer(0, 2, "4%", t0 + 60ms));  // 10 ms after the last one sent
  CHECK(t.NextDeadline() == t0 + 100ms);
}

TEST_CASE("ProgressThrottle: ranks and streams are limited apart; a complete line drops the kept update") {
  ProgressThrottle t;
  const TimePoint t0{1h};
  CHECK(t.Offer(0, 2, "a", t0));
  CHECK(t.Offer(1, 2, "b", t0));
  CHECK(t.Offer(0, 1, "c", t0));
  CHECK_FALSE(t.Offer(0, 2, "a2", t0 + 1ms));
  CHECK_FALSE(t.Offer(1, 2, "b2", t0 + 1ms));
  t.Completed(0, 2);
  auto due = t.TakeDue(t0 + 1s);
  REQUIRE(due.size() == 1);
  CHECK(due[0].rank == 1);
  CHECK(due[0].text == "b2");
  CHECK(t.Offer(0, 2, "later", t0 + 1s));
  t.Clear();
  CHECK(t.Offer(0, 2, "new generation", t0 + 1s + 1ms));
}

}  // namespace
}  // namespace ds
