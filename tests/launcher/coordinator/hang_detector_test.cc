// HangDetector on made-up views and times: hung once no rank advanced for
// max(factor x the median step time, floor), said once; not while a rank
// has not reported; the floor alone while no step time is known; off at 0;
// a new generation judges afresh.
#include <catch2/catch.hpp>

#include "launcher/coordinator/hang_detector.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::steady_clock::time_point;
const TimePoint kT0{std::chrono::hours(1)};

// `n` ranks on two nodes, last heard at kT0 + heard[i] (ms), step time `step_s`.
RankProgressView View(int n, double step_s, std::chrono::milliseconds heard = 0ms) {
  RankProgressView v;
  for (int r = 0; r < n; ++r) {
    RankProgress p;
    p.rank = r;
    p.step = 100;
    p.step_seconds = step_s;
    v.Update(static_cast<uint32_t>(r % 2), {p}, kT0 + (r == 0 ? heard : 0ms));
  }
  return v;
}

TEST_CASE("hang: no rank advanced for factor x the median step time is said once", "[hang]") {
  HangDetector d({10, 2});
  const RankProgressView v = View(4, 0.5, 1s);  // rank 0 advanced last, at kT0 + 1 s
  CHECK_FALSE(d.Judge(v, 4, kT0 + 5s));          // 4 s: below 10 x 0.5 s
  auto line = d.Judge(v, 4, kT0 + 6s);
  REQUIRE(line);
  CHECK(*line ==
        "hang: no rank advanced for 5.0 s (threshold 10 x the median step time 500.0 ms, at least 2 s); taking every "
        "rank's stacks");
  CHECK_FALSE(d.Judge(v, 4, kT0 + 7s));  // said once
  d.Reset();
  CHECK(d.Judge(v, 4, kT0 + 7s));  // a new generation judges afresh
}

TEST_CASE("hang: the floor holds for fast steps, and alone while no step time is known", "[hang]") {
  HangDetector d({10, 3});
  CHECK_FALSE(d.Judge(View(2, 0.01), 2, kT0 + 2900ms));
  CHECK(d.Judge(View(2, 0.01), 2, kT0 + 3s));
  HangDetector unknown({10, 3});
  CHECK_FALSE(unknown.Judge(View(2, 0), 2, kT0 + 2s));
  CHECK(unknown.Judge(View(2, 0), 2, kT0 + 3s));
}

TEST_CASE("hang: nothing is said until every rank reported, nor when off", "[hang]") {
  HangDetector d({10, 1});
  CHECK_FALSE(d.Judge(View(3, 0.1), 4, kT0 + 1h));  // rank 3 never stepped: not this detector's case
  HangDetector off({0, 1});
  CHECK_FALSE(off.Judge(View(4, 0.1), 4, kT0 + 1h));
}

}  // namespace
}  // namespace ds
