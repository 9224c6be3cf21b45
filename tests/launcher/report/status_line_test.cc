// The status line's words from a JobView: exact text.
#include "launcher/report/status_line.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

JobView Running() {
  JobView v;
  v.state = "running";
  v.elapsed_seconds = 185.4;
  v.generation = 1;
  v.restarts = 1;
  v.max_restarts = 3;
  v.world_size = 4;
  v.ranks_running = 4;
  return v;
}

TEST_CASE("status line: elapsed, generation, restarts left, ranks; no steps before any", "[status_line]") {
  JobView v = Running();
  CHECK(StatusLineText(v) == "dslaunch 3m05s gen 1 (restarts left 2) ranks 4/4");
  v.state = "stopping";
  v.ranks_running = 3;
  CHECK(StatusLineText(v) == "dslaunch 3m05s gen 1 (restarts left 2) ranks 3/4 stopping");
}

TEST_CASE("status line: the median step, the slowest rank behind it, step time and samples/s", "[status_line]") {
  JobView v = Running();
  v.ranks = {{0, 0, "a", 120, 0.05, 100}, {1, 0, "a", 120, 0.05, 100},
             {2, 1, "b", 118, 0.08, 90},  {3, 1, "b", 121, 0.05, 110}};
  CHECK(StatusLineText(v) ==
        "dslaunch 3m05s gen 1 (restarts left 2) ranks 4/4 step 120 (slowest r2 118) 0.05s/step 400 samples/s");
  v.ranks[2] = {2, 1, "b", 121, 0.05, -1};  // one rank did not say: no sum that would be short
  CHECK(StatusLineText(v) == "dslaunch 3m05s gen 1 (restarts left 2) ranks 4/4 step 121 0.05s/step");  // one step behind: noise
  for (RankView& r : v.ranks) r.step += 1000;  // 1121 vs 1120: within 1 %
  CHECK(StatusLineText(v).find("slowest") == std::string::npos);
  v.ranks[0].step = 1100;                       // 21 steps behind 1121: shown
  CHECK(StatusLineText(v).find(" step 1121 (slowest r0 1100) ") != std::string::npos);
}

TEST_CASE("status line: with snapshots on, the saves taken and the newest step held", "[status_line]") {
  JobView v = Running();
  v.snapshots = true;
  CHECK(StatusLineText(v) == "dslaunch 3m05s gen 1 (restarts left 2) ranks 4/4 snapshots 0");
  v.snapshots_taken = 12;
  v.snapshot_step = 1100;
  v.ranks = {{0, 0, "a", 1200, 0.05, -1}};
  CHECK(StatusLineText(v) ==
        "dslaunch 3m05s gen 1 (restarts left 2) ranks 4/4 step 1200 0.05s/step snapshots 12 (newest step 1100)");
  v.snapshots = false;  // off: nothing said, whatever the counts
  CHECK(StatusLineText(v).find("snapshots") == std::string::npos);
}

TEST_CASE("status line: elapsed time as a person writes it", "[status_line]") {
  CHECK(ElapsedText(0) == "0s");
  CHECK(ElapsedText(59.9) == "59s");
  CHECK(ElapsedText(3725) == "1h02m");
}

}  // namespace
}  // namespace ds
