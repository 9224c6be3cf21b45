// TimelineSampler: what a run's samples become (generations, restarts with
// their causes, lost/rejoined/slow nodes, samples/s) and its bounds.
#include "launcher/report/run_report_timeline.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

JobView View(double t, int generation, std::vector<NodeView> nodes, double sps) {
  JobView v;
  v.elapsed_seconds = t;
  v.generation = generation;
  v.world_size = 2;
  v.nodes = std::move(nodes);
  if (sps >= 0) v.ranks = {{0, 0, "a", 1, 0.1, sps / 2}, {1, 1, "b", 1, 0.1, sps / 2}, {2, 1, "b", -1, 0, -1}};
  return v;
}

TEST_CASE("timeline: generations, a restart and its cause, a node lost and back, slow, samples/s", "[timeline]") {
  TimelineSampler s;
  s.Sample(View(0, 0, {{0, "a", "waiting", -1}, {1, "b", "waiting", -1}}, -1), {}, {});
  s.Sample(View(2, 0, {{0, "a", "running", 0}, {1, "b", "running", 0}}, 100), {1}, {});
  s.Sample(View(4, 0, {{0, "a", "running", 0}, {1, "b", "lost", 3}}, 100), {1}, {});
  s.Sample(View(6, 1, {{0, "a", "running", 0}, {1, "b", "running", 0}}, 80), {}, {{3.5, "host b: agent lost"}});
  const RunTimeline& t = s.timeline();
  CHECK(t.end == 6);
  REQUIRE(t.generations.size() == 2);
  CHECK(t.generations[0].start == 0);
  CHECK(t.generations[0].nodes == std::vector<uint32_t>{0, 1});
  CHECK(t.generations[0].world_size == 2);
  CHECK(t.generations[1].start == 6);
  REQUIRE(t.events.size() == 4);
  CHECK((t.events[0].kind == "slow" && t.events[0].t == 2 && t.events[0].host == "b"));
  // the restart at its failure's time, before the loss the sample at 4 s saw
  CHECK((t.events[1].kind == "restart" && t.events[1].t == 3.5 && t.events[1].text == "host b: agent lost"));
  CHECK((t.events[2].kind == "lost" && t.events[2].t == 4 && t.events[2].node == 1));
  CHECK((t.events[3].kind == "rejoined" && t.events[3].node == 1));
  REQUIRE(t.samples.size() == 3);  // none before a rank reported it
  CHECK((t.samples[0].t == 2 && t.samples[0].samples_per_second == 100));
  CHECK(t.samples[2].samples_per_second == 80);
}

TEST_CASE("timeline: the agents leaving a done job are not nodes lost", "[timeline]") {
  TimelineSampler s;
  s.Sample(View(2, 0, {{0, "a", "running", 0}}, 100), {}, {});
  JobView done = View(3, 0, {{0, "a", "lost", 1}}, -1);
  done.state = "done";
  s.Sample(done, {}, {});
  CHECK(s.timeline().events.empty());
  CHECK(s.timeline().end == 3);
}

// Issue 42 item 10: a restart in the job's last 2 s (after the last periodic
// sample) came only with the final sample, which returned before taking the
// causes: the report said "No restarts."
TEST_CASE("timeline: a restart told of only by the final sample is kept", "[timeline]") {
  TimelineSampler s;
  s.Sample(View(2, 0, {{0, "a", "running", 0}}, 100), {}, {});
  JobView done = View(3, 1, {{0, "a", "lost", 1}}, -1);
  done.state = "done";
  s.Sample(done, {}, {{2.5, "rank 0 exited with code 1"}});
  REQUIRE(s.timeline().events.size() == 1);
  CHECK((s.timeline().events[0].kind == "restart" && s.timeline().events[0].t == 2.5 &&
         s.timeline().events[0].text == "rank 0 exited with code 1"));
}

TEST_CASE("timeline: samples stay bounded, the oldest thinned, the newest kept", "[timeline]") {
  TimelineSampler s;
  const int n = static_cast<int>(TimelineSampler::kMaxSamples) * 3;
  for (int i = 0; i < n; ++i) s.Sample(View(i, 0, {}, 10), {}, {});
  const auto& samples = s.timeline().samples;
  CHECK(samples.size() <= TimelineSampler::kMaxSamples);
  CHECK(samples.front().t == 0);
  CHECK(samples.back().t == n - 1);
  CHECK(samples[samples.size() - 2].t == n - 2);  // the newest at full resolution
  CHECK(samples[1].t - samples[0].t > 2);         // the oldest thinned
}

TEST_CASE("timeline: a snapshot point where the saves taken rose, with the newest step held", "[timeline]") {
  TimelineSampler s;
  auto with = [](double t, uint64_t saves, int64_t step) {
    JobView v = View(t, 0, {{0, "a", "running", 0}}, -1);
    v.snapshots = true;
    v.snapshots_taken = saves;
    v.snapshot_step = step;
    return v;
  };
  s.Sample(with(1, 0, -1), {}, {});
  s.Sample(with(2, 1, 10), {}, {});
  s.Sample(with(3, 1, 10), {}, {});  // no new save: no point
  s.Sample(with(4, 3, 30), {}, {});  // two saves between samples: one point
  const auto& p = s.timeline().snapshots;
  REQUIRE(p.size() == 2);
  CHECK((p[0].t == 2 && p[0].step == 10));
  CHECK((p[1].t == 4 && p[1].step == 30));
  JobView done = with(5, 4, -1);  // the last view: the agents left, their shards forgotten
  done.state = "done";
  s.Sample(done, {}, {});
  REQUIRE(p.size() == 3);
  CHECK((p[2].t == 5 && p[2].step == 30));  // the newest step seen before
  TimelineSampler bounded;
  const int n = static_cast<int>(TimelineSampler::kMaxSamples) * 3;
  for (int i = 1; i <= n; ++i) bounded.Sample(with(i, static_cast<uint64_t>(i), i), {}, {});
  CHECK(bounded.timeline().snapshots.size() <= TimelineSampler::kMaxSamples);
  CHECK(bounded.timeline().snapshots.back().step == n);
}

TEST_CASE("timeline: events past the bound are counted, not kept", "[timeline]") {
  TimelineSampler s;
  std::vector<RestartCause> causes(TimelineSampler::kMaxEvents + 5, {0.5, "c"});
  s.Sample(View(1, 0, {}, -1), {}, causes);
  CHECK(s.timeline().events.size() == TimelineSampler::kMaxEvents);
  CHECK(s.timeline().dropped == 5);
}

TEST_CASE("timeline: a restart's time is never past the sample that tells of it", "[timeline]") {
  TimelineSampler s;
  s.Sample(View(2, 1, {}, -1), {}, {{7, "clock skew"}, {-1, "before the start"}});
  REQUIRE(s.timeline().events.size() == 2);
  CHECK(s.timeline().events[0].t == 0);
  CHECK(s.timeline().events[1].t == 2);
}

TEST_CASE("timeline: the lowest rank's loss and accuracy over steps; a restart that goes back redoes them", "[timeline]") {
  TimelineSampler s;
  auto view = [](double t, std::vector<RankView> ranks) {
    JobView v;
    v.elapsed_seconds = t;
    v.ranks = std::move(ranks);
    return v;
  };
  s.Sample(view(2, {{0, 0, "a", 10, 0.1, -1}, {1, 0, "a", 10, 0.1, -1, -1, -1, 0, -1, 0}}), {}, {});  // none said yet
  CHECK(s.timeline().losses.empty());
  s.Sample(view(4, {{0, 0, "a", 20, 0.1, -1, -1, 20, 2.5}, {1, 0, "a", 20, 0.1, -1, -1, 20, 9.0}}), {}, {});
  s.Sample(view(6, {{0, 0, "a", 40, 0.1, -1, -1, 40, 1.5, 40, 0.5}, {1, 0, "a", 40, 0.1, -1, -1, 40, 9.0}}), {}, {});
  s.Sample(view(8, {{0, 0, "a", 40, 0.1, -1, -1, 40, 1.5, 40, 0.5}}), {}, {});  // nothing new: no point
  s.Sample(view(10, {{0, 0, "a", 35, 0.1, -1, -1, 30, 1.7}}), {}, {});          // resumed from step 30
  const RunTimeline& t = s.timeline();
  CHECK(t.metric_rank == 0);
  REQUIRE(t.losses.size() == 2);  // step 40's was redone
  CHECK((t.losses[0].step == 20 && t.losses[0].value == 2.5));
  CHECK((t.losses[1].step == 30 && t.losses[1].value == 1.7));
  REQUIRE(t.accuracies.size() == 1);
  CHECK((t.accuracies[0].step == 40 && t.accuracies[0].value == 0.5));
}

TEST_CASE("timeline: the step-time strip: a column per sample, ranks in the order seen, bounded", "[timeline]") {
  TimelineSampler s;
  JobView v;
  v.elapsed_seconds = 2;
  v.ranks = {{0, 0, "a", 1, 0, -1}};
  s.Sample(v, {}, {});  // no step time yet: no column
  CHECK(s.timeline().strip.empty());
  v.ranks = {{0, 0, "a", 5, 0.1, -1}, {3, 1, "b", 5, 0.4, -1}};
  s.Sample(v, {}, {});
  REQUIRE(s.timeline().strip.size() == 1);
  CHECK(s.timeline().strip_ranks == std::vector<int32_t>{0, 3});
  CHECK(s.timeline().strip[0].step_seconds == std::vector<double>{0.1, 0.4});
  for (int i = 0; i < 100; ++i) v.ranks.push_back({100 + i, 2, "c", 5, 0.1, -1});
  for (size_t k = 0; k < 3 * TimelineSampler::kMaxStripColumns; ++k) {
    v.elapsed_seconds = 4 + 2.0 * k;
    s.Sample(v, {}, {});
  }
  const RunTimeline& t = s.timeline();
  CHECK(t.strip_ranks.size() == TimelineSampler::kMaxStripRanks);
  CHECK(t.strip_ranks_left_out == 100 + 2 - TimelineSampler::kMaxStripRanks);  // each counted once
  CHECK(t.strip.size() <= TimelineSampler::kMaxStripColumns);
  CHECK(t.strip.front().t == 2);  // the oldest kept, thinned
  CHECK(t.strip.back().t == 4 + 2.0 * (3 * TimelineSampler::kMaxStripColumns - 1));
  CHECK(t.strip.back().step_seconds.size() == TimelineSampler::kMaxStripRanks);
}

}  // namespace
}  // namespace ds
