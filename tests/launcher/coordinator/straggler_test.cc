// StragglerDetector on made-up views and times: a node steadily at the factor
// is named with its ranks after the window, once, a 2x one sooner; a short
// spike is not; a ratio wavering around the factor is; recovery is said once;
// a gap does not count as evidence; the step time is used when a rank does
// not report compute; with two nodes the slow one is still found (peers'
// median excludes it); one node alone is never judged.
#include <catch2/catch.hpp>

#include "launcher/coordinator/straggler.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::steady_clock::time_point;
const TimePoint kT0{std::chrono::hours(1)};
const std::vector<std::string> kNames = {"w0", "w1", "w2", "w3"};

// Four nodes of two ranks each, step 0.5 s, compute `compute[node]` seconds (<0: unknown).
RankProgressView View(const std::vector<double>& compute) {
  RankProgressView v;
  for (uint32_t node = 0; node < compute.size(); ++node) {
    std::vector<RankProgress> ranks(2);
    for (int i = 0; i < 2; ++i) {
      ranks[i].rank = static_cast<int32_t>(2 * node + i);
      ranks[i].step = 100;
      ranks[i].step_seconds = 0.5;
      ranks[i].compute_seconds = compute[node];
    }
    v.Update(node, ranks, kT0);
  }
  return v;
}

TEST_CASE("straggler: a node steadily at the factor is named after the window, once", "[straggler]") {
  StragglerDetector d({1.5, 2.0, 1.0});
  const RankProgressView slow = View({0.2, 0.2, 0.2, 0.3});
  CHECK(d.Judge(slow, kNames, kT0).empty());
  CHECK(d.Judge(slow, kNames, kT0 + 1s) ==
        std::vector<std::string>{"slow: w3 (ranks 6-7) 1.5x the median compute time for the last 2 s"});
  CHECK(d.Judge(slow, kNames, kT0 + 2s).empty());  // said once
  CHECK(d.Slow() == std::vector<uint32_t>{3});
}

TEST_CASE("straggler: a node 2x slower is named sooner; a short spike is not", "[straggler]") {
  StragglerDetector d({1.5, 2.0, 1.0});
  CHECK(d.Judge(View({0.2, 0.2, 0.4, 0.2}), kNames, kT0) ==
        std::vector<std::string>{"slow: w2 (ranks 4-5) 2.0x the median compute time for the last 1 s"});
  StragglerDetector spike({1.5, 2.0, 1.0});
  CHECK(spike.Judge(View({0.2, 0.2, 0.32, 0.2}), kNames, kT0).empty());  // 1.6x: 0.35 of 0.5
  CHECK(spike.Judge(View({0.2, 0.2, 0.2, 0.2}), kNames, kT0 + 1s).empty());
  CHECK(spike.Judge(View({0.2, 0.2, 0.2, 0.2}), kNames, kT0 + 2s).empty());
  CHECK(spike.Judge(View({0.2, 0.2, 0.32, 0.2}), kNames, kT0 + 3s).empty());  // the first was forgotten
  CHECK(spike.Slow().empty());
}

TEST_CASE("straggler: a ratio wavering around the factor is not lost to its dips", "[straggler]") {
  // A throttled CPU: stalls that land in a collective do not count as compute.
  StragglerDetector d({1.5, 2.0, 1.0});
  const double ratios[] = {1.4, 1.2, 1.45, 1.3, 1.55};
  for (int i = 0; i < 4; ++i)
    CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.2 * ratios[i]}), kNames, kT0 + i * 1s).empty());
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.2 * ratios[4]}), kNames, kT0 + 4s) ==
        std::vector<std::string>{"slow: w3 (ranks 6-7) 1.4x the median compute time for the last 5 s"});
}

TEST_CASE("straggler: recovery is said once, after the window's worth below the halfway mark", "[straggler]") {
  StragglerDetector d({1.5, 2.0, 1.0});
  REQUIRE(d.Judge(View({0.2, 0.2, 0.2, 0.5}), kNames, kT0).size() == 1);
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.26}), kNames, kT0 + 1s).empty());  // 1.3x: above 1.25x
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.2}), kNames, kT0 + 2s).empty());
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.2}), kNames, kT0 + 3s) ==
        std::vector<std::string>{"recovered: w3 at 1.0x the median compute time"});
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.2}), kNames, kT0 + 4s).empty());
  CHECK(d.Slow().empty());
}

TEST_CASE("straggler: after a gap one judgement weighs two intervals at most", "[straggler]") {
  StragglerDetector d({1.5, 2.0, 1.0});
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.28}), kNames, kT0).empty());        // 1.4x: 0.15
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.28}), kNames, kT0 + 30s).empty());  // + 0.3, not 4.5
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.28}), kNames, kT0 + 31s).size() == 1);
}

TEST_CASE("straggler: the step time when a rank does not report compute; one slow rank named", "[straggler]") {
  RankProgressView v = View({-1, -1, -1});
  RankProgress r;
  r.rank = 3;
  r.step = 90;
  r.step_seconds = 1.2;  // 2.4x the others' 0.5 s
  v.Update(1, {r}, kT0);
  StragglerDetector d({1.5, 2.0, 1.0});
  CHECK(d.Judge(v, kNames, kT0) ==
        std::vector<std::string>{"slow: w1 (rank 3) 2.4x the median step time for the last 1 s"});
}

TEST_CASE("straggler: two nodes: the slow one is found; one node alone, or off, says nothing", "[straggler]") {
  StragglerDetector two({1.5, 1.0, 1.0});
  CHECK(two.Judge(View({0.1, 0.3}), kNames, kT0) ==
        std::vector<std::string>{"slow: w1 (ranks 2-3) 3.0x the median compute time for the last 1 s"});
  StragglerDetector one({1.5, 2.0, 1.0});
  CHECK(one.Judge(View({0.9}), kNames, kT0).empty());
  StragglerDetector off({0, 2.0, 1.0});
  CHECK(off.Judge(View({0.1, 0.9}), kNames, kT0).empty());
}

TEST_CASE("straggler: rank ranges", "[straggler]") {
  CHECK(RankRanges({6}) == "6");
  CHECK(RankRanges({6, 7}) == "6-7");
  CHECK(RankRanges({2, 6, 7, 8, 10}) == "2, 6-8, 10");
}

}  // namespace
}  // namespace ds
