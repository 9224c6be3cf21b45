#include "common/clock.h"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;

TEST_CASE("RealClock never goes backwards") {
  auto a = ds::RealClock().Now();
  auto b = ds::RealClock().Now();
  CHECK(b >= a);
}

TEST_CASE("FakeClock moves only when told") {
  ds::FakeClock clock;
  auto start = clock.Now();
  CHECK(clock.Now() == start);
  clock.Advance(250ms);
  CHECK(clock.Now() - start == 250ms);
  clock.Set(start);
  CHECK(clock.Now() == start);
  // Far enough from the epoch that subtracting an hour stays valid.
  CHECK(clock.Now() - 1h > std::chrono::steady_clock::time_point{});
}
