// RankSummaries on made-up times: the step time per step advanced, means
// over the window (old steps drop out, the newest stays; a stall in one step
// of many counts), compute and
// samples unknown from short beats, resent or reordered beats ignored, only
// ranks that stepped reported, once.
#include <catch2/catch.hpp>

#include <limits>

#include "agent/control/rank_summary.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
const RankSummaries::TimePoint kT0{std::chrono::hours(1)};
const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST_CASE("rank summary: mean step time per step advanced, mean compute, samples/s", "[rank_summary]") {
  RankSummaries s;
  s.OnBeat(2, 1, 50000, 16, -1, kT0);
  s.OnBeat(2, 2, 60000, 16, -1, kT0 + 100ms);
  s.OnBeat(2, 4, 70000, 16, -1, kT0 + 300ms);   // two steps in 200 ms (a datagram lost)
  s.OnBeat(2, 5, 110000, 16, -1, kT0 + 400ms);
  auto out = s.TakeChanged(kT0 + 400ms);
  REQUIRE(out.size() == 1);
  CHECK(out[0].rank == 2);
  CHECK(out[0].step == 5);
  CHECK(out[0].step_micros == 100000);    // 400 ms over 4 steps
  CHECK(out[0].compute_micros == 80000);  // (60 + 70 + 110) / 3 ms
  CHECK(out[0].samples_milli == 120000);  // 48 samples in 400 ms
}

TEST_CASE("rank summary: the newest loss and accuracy said, with their steps, kept across windows", "[rank_summary]") {
  RankSummaries s;
  s.OnBeat(1, 10, -1, -1, -1, kT0);
  s.OnMetrics(1, 10, 0.9, kNaN);
  auto out = s.TakeChanged(kT0);
  REQUIRE(out.size() == 1);
  CHECK(out[0].loss_step == 10);
  CHECK(out[0].loss == 0.9);
  CHECK(out[0].accuracy_step == -1);
  s.OnMetrics(1, 10, kNaN, 0.75);  // a second beat of step 10 after an evaluation
  out = s.TakeChanged(kT0 + 1s);
  REQUIRE(out.size() == 1);  // it changed, though no step did
  CHECK(out[0].loss == 0.9);
  CHECK(out[0].accuracy_step == 10);
  CHECK(out[0].accuracy == 0.75);
  s.OnBeat(1, 11, -1, -1, -1, kT0 + 10s);
  s.OnMetrics(1, 9, 5.0, 0.1);  // older than what was said: ignored
  out = s.TakeChanged(kT0 + 10s);
  REQUIRE(out.size() == 1);
  CHECK(out[0].loss_step == 10);
  CHECK(out[0].loss == 0.9);  // long past the window, still said
  CHECK(out[0].accuracy == 0.75);
  CHECK(s.TakeChanged(kT0 + 11s).empty());
}

TEST_CASE("rank summary: a stall in one step of many shows (a throttled CPU), unlike a median", "[rank_summary]") {
  RankSummaries s;
  s.OnBeat(0, 0, -1, -1, -1, kT0);
  for (int i = 1; i <= 9; ++i) s.OnBeat(0, i, 10000, -1, -1, kT0 + i * 10ms);
  s.OnBeat(0, 10, 100000, -1, -1, kT0 + 190ms);  // stopped for 90 ms in its compute
  auto out = s.TakeChanged(kT0 + 190ms);
  REQUIRE(out.size() == 1);
  CHECK(out[0].compute_micros == 19000);  // the median would say 10 ms
  CHECK(out[0].step_micros == 19000);
}

TEST_CASE("rank summary: steps older than the window drop out, the newest stays", "[rank_summary]") {
  RankSummaries s(2s);
  s.OnBeat(0, 1, -1, -1, -1, kT0);
  for (int i = 2; i <= 6; ++i) s.OnBeat(0, i, -1, -1, -1, kT0 + (i - 1) * 100ms);  // 100 ms steps
  s.OnBeat(0, 7, -1, -1, -1, kT0 + 3s);                                            // a 2.5 s step
  auto out = s.TakeChanged(kT0 + 3s);
  REQUIRE(out.size() == 1);
  CHECK(out[0].step_micros == 2500000);  // the 100 ms steps ended more than 2 s ago
  CHECK(out[0].compute_micros == -1);    // short beats: unknown
  CHECK(out[0].samples_milli == -1);
}

TEST_CASE("rank summary: resent beats are ignored; only ranks that stepped are reported, once", "[rank_summary]") {
  RankSummaries s;
  s.OnBeat(1, 10, -1, -1, -1, kT0);
  s.OnBeat(3, 10, -1, -1, -1, kT0);
  CHECK(s.TakeChanged(kT0).size() == 2);
  CHECK(s.TakeChanged(kT0).empty());
  s.OnBeat(3, 10, -1, -1, -1, kT0 + 1s);  // the same step again
  s.OnBeat(3, 9, -1, -1, -1, kT0 + 1s);   // an older one, reordered
  CHECK(s.TakeChanged(kT0 + 1s).empty());
  s.OnBeat(3, 11, -1, -1, -1, kT0 + 2s);
  auto out = s.TakeChanged(kT0 + 2s);
  REQUIRE(out.size() == 1);
  CHECK(out[0].rank == 3);
  CHECK(out[0].step_micros == 2000000);  // 10 -> 11 over 2 s (the ignored beats moved nothing)
  s.Clear();
  s.OnBeat(3, 1, -1, -1, -1, kT0 + 3s);
  out = s.TakeChanged(kT0 + 3s);
  REQUIRE(out.size() == 1);
  CHECK(out[0].step == 1);
  CHECK(out[0].step_micros == 0);  // one beat: no step time yet
}

TEST_CASE("rank summaries: a save's stall is said until the next save, whatever the window", "[rank_summary]") {
  RankSummaries s;
  s.OnBeat(0, 1, -1, -1, -1, kT0);
  CHECK(s.TakeChanged(kT0)[0].save_stall_micros == -1);  // no save yet
  s.OnBeat(0, 2, -1, -1, 230, kT0 + 100ms);
  CHECK(s.TakeChanged(kT0 + 100ms)[0].save_stall_micros == 230);
  s.OnBeat(0, 3, -1, -1, -1, kT0 + 10s);  // the save long out of the window
  CHECK(s.TakeChanged(kT0 + 10s)[0].save_stall_micros == 230);
  s.OnBeat(0, 3, -1, -1, 999, kT0 + 11s);  // a resent beat says nothing
  s.OnBeat(0, 4, -1, -1, 80, kT0 + 12s);
  CHECK(s.TakeChanged(kT0 + 12s)[0].save_stall_micros == 80);
}

}  // namespace
}  // namespace ds
