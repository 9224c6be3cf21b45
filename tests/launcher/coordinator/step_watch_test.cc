// StepWatch on made-up views and times: with hang_factor or hang_timeout on
// and no step from any rank for the detector's limit (20 s to 60 s), one line that says so
// and why (word for word), once per generation; nothing once a rank steps,
// with the detectors off, or before the wait.
#include <catch2/catch.hpp>

#include "launcher/coordinator/step_watch.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
const StepWatch::TimePoint kT0{std::chrono::hours(1)};

TEST_CASE("step watch: no step in the detector's limit is said once, with why", "[hang]") {
  StepWatch w({/*hang_factor=*/10, /*hang_floor=*/25, /*hang_timeout=*/0});
  const RankProgressView none;
  CHECK_FALSE(w.Judge(none, 0, kT0));
  CHECK_FALSE(w.Judge(none, 0, kT0 + 24900ms));
  auto line = w.Judge(none, 0, kT0 + 25s);
  REQUIRE(line);
  CHECK(*line ==
        "no rank has reported a step in generation 0's first 25 s, so hang_factor has nothing to watch: step beats "
        "come from a Python worker's torch.optim step (the dslaunch package, on its path unless python -I or -E, or "
        "DSLAUNCH_PYTHON_PACKAGE=0), from dslaunch.step(), or from a program's own beats (docs/usage.md, \"Step "
        "heartbeats from your own script\")");
  CHECK_FALSE(w.Judge(none, 0, kT0 + 26s));  // once
  CHECK_FALSE(w.Judge(none, 1, kT0 + 27s));  // a new generation waits afresh
  CHECK(w.Judge(none, 1, kT0 + 52s));
}

TEST_CASE("step watch: the shorter limit, both detectors named, 20 s to a minute", "[hang]") {
  StepWatch both({10, 40, 30});
  CHECK(both.wait_seconds() == 30);
  const RankProgressView none;
  (void)both.Judge(none, 2, kT0);
  auto line = both.Judge(none, 2, kT0 + 30s);
  REQUIRE(line);
  CHECK(line->find("in generation 2's first 30 s, so hang_factor and hang_timeout have nothing to watch") !=
        std::string::npos);
  CHECK(StepWatch({10, 3, 0}).wait_seconds() == kStepWatchMinSeconds);  // torch's import is no hang
  CHECK(StepWatch({0, 30, 600}).wait_seconds() == kStepWatchMaxSeconds);
  CHECK(StepWatch({0, 30, 0}).wait_seconds() == 0);  // no detector on: never said
}

TEST_CASE("step watch: a rank that steps silences it; off says nothing", "[hang]") {
  StepWatch w({10, 5, 0});
  RankProgressView stepped;
  RankProgress p;
  p.rank = 1;
  p.step = 3;
  stepped.Update(0, {p}, kT0);
  (void)w.Judge(stepped, 0, kT0);
  CHECK_FALSE(w.Judge(stepped, 0, kT0 + 60s));
  StepWatch off({0, 5, 0});
  CHECK_FALSE(off.Judge(RankProgressView{}, 0, kT0));
  CHECK_FALSE(off.Judge(RankProgressView{}, 0, kT0 + 1h));
}

}  // namespace
}  // namespace ds
