// StragglerDetector on made-up views and times: a node 2x slower in compute
// is named with its ranks after the window, once; a short spike is not; the
// step time is used when a rank does not report compute; recovery is said
// once after the window below the halfway mark; with two nodes the slow one
// is still found (peers' median excludes it); one node alone is never judged.
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

TEST_CASE("straggler: a node 2x slower in compute is named after the window, once", "[straggler]") {
  StragglerDetector d({1.5, 2.0});
  const RankProgressView slow = View({0.2, 0.2, 0.2, 0.4});
  CHECK(d.Judge(slow, kNames, kT0).empty());
  CHECK(d.Judge(slow, kNames, kT0 + 1s).empty());
  CHECK(d.Judge(slow, kNames, kT0 + 2s) ==
        std::vector<std::string>{"slow: w3 (ranks 6-7) 2.0x the median compute time for the last 2 s"});
  CHECK(d.Judge(slow, kNames, kT0 + 3s).empty());  // said once
  CHECK(d.Slow() == std::vector<uint32_t>{3});
}

TEST_CASE("straggler: a spike shorter than the window is not reported", "[straggler]") {
  StragglerDetector d({1.5, 2.0});
  CHECK(d.Judge(View({0.2, 0.2, 0.6, 0.2}), kNames, kT0).empty());
  CHECK(d.Judge(View({0.2, 0.2, 0.6, 0.2}), kNames, kT0 + 1s).empty());
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.2}), kNames, kT0 + 1500ms).empty());  // back: the clock restarts
  CHECK(d.Judge(View({0.2, 0.2, 0.6, 0.2}), kNames, kT0 + 2500ms).empty());
  CHECK(d.Judge(View({0.2, 0.2, 0.6, 0.2}), kNames, kT0 + 4s).empty());
  CHECK(d.Slow().empty());
}

TEST_CASE("straggler: recovery is said once, after the window below the halfway mark", "[straggler]") {
  StragglerDetector d({1.5, 2.0});
  d.Judge(View({0.2, 0.2, 0.2, 0.5}), kNames, kT0);
  REQUIRE(d.Judge(View({0.2, 0.2, 0.2, 0.5}), kNames, kT0 + 2s).size() == 1);
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.26}), kNames, kT0 + 3s).empty());  // 1.3x: not yet below 1.25x
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.22}), kNames, kT0 + 4s).empty());
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.22}), kNames, kT0 + 6s) ==
        std::vector<std::string>{"recovered: w3 at 1.1x the median compute time"});
  CHECK(d.Judge(View({0.2, 0.2, 0.2, 0.22}), kNames, kT0 + 7s).empty());
  CHECK(d.Slow().empty());
}

TEST_CASE("straggler: the step time when a rank does not report compute; one slow rank named", "[straggler]") {
  RankProgressView v = View({-1, -1, -1});
  RankProgress r;
  r.rank = 3;
  r.step = 90;
  r.step_seconds = 1.2;  // 2.4x the others' 0.5 s
  v.Update(1, {r}, kT0);
  StragglerDetector d({1.5, 2.0});
  d.Judge(v, kNames, kT0);
  CHECK(d.Judge(v, kNames, kT0 + 30s) ==
        std::vector<std::string>{"slow: w1 (rank 3) 2.4x the median step time for the last 30 s"});
}

TEST_CASE("straggler: two nodes: the slow one is found; one node alone, or off, says nothing", "[straggler]") {
  StragglerDetector two({1.5, 1.0});
  two.Judge(View({0.1, 0.3}), kNames, kT0);
  CHECK(two.Judge(View({0.1, 0.3}), kNames, kT0 + 1s) ==
        std::vector<std::string>{"slow: w1 (ranks 2-3) 3.0x the median compute time for the last 1 s"});
  StragglerDetector one({1.5, 0.0});
  CHECK(one.Judge(View({0.9}), kNames, kT0).empty());
  StragglerDetector off({0, 0.0});
  CHECK(off.Judge(View({0.1, 0.9}), kNames, kT0).empty());
}

TEST_CASE("straggler: rank ranges", "[straggler]") {
  CHECK(RankRanges({6}) == "6");
  CHECK(RankRanges({6, 7}) == "6-7");
  CHECK(RankRanges({2, 6, 7, 8, 10}) == "2, 6-8, 10");
}

}  // namespace
}  // namespace ds
