#include "launcher/report/run_report_timeline.h"

#include <algorithm>

namespace ds {

void TimelineSampler::Event(TimelineEvent e) {
  if (t_.events.size() >= kMaxEvents) {
    ++t_.dropped;
    return;
  }
  auto at = std::upper_bound(t_.events.begin(), t_.events.end(), e.t,
                             [](double t, const TimelineEvent& x) { return t < x.t; });
  t_.events.insert(at, std::move(e));
}

namespace {

// Full: keep every other point of the older half.
template <typename T>
void Thin(std::vector<T>& s, size_t max) {
  if (s.size() < max) return;
  const size_t half = s.size() / 2;
  size_t out = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (i >= half || i % 2 == 0) s[out++] = s[i];
  s.resize(out);
}

}  // namespace

void TimelineSampler::AddSample(double t, double sps) {
  Thin(t_.samples, kMaxSamples);
  t_.samples.push_back({t, sps});
}

void TimelineSampler::AddSnapshot(double t, int64_t step) {
  Thin(t_.snapshots, kMaxSamples);
  t_.snapshots.push_back({t, step});
}

namespace {

// `p` after `points`: a step at or below the last replaces those it redoes.
void AddPoint(std::vector<MetricPoint>& points, MetricPoint p, size_t max) {
  if (!points.empty() && points.back().step == p.step && points.back().value == p.value) return;
  while (!points.empty() && points.back().step >= p.step) points.pop_back();
  Thin(points, max);
  points.push_back(p);
}

}  // namespace

void TimelineSampler::AddMetrics(const JobView& v) {
  const RankView* loss = nullptr;
  const RankView* accuracy = nullptr;
  for (const RankView& r : v.ranks) {  // sorted by rank: the lowest that said one
    if (!loss && r.loss_step >= 0) loss = &r;
    if (!accuracy && r.accuracy_step >= 0) accuracy = &r;
  }
  if (loss) {
    AddPoint(t_.losses, {loss->loss_step, loss->loss}, kMaxSamples);
    t_.metric_rank = loss->rank;
  }
  if (accuracy) AddPoint(t_.accuracies, {accuracy->accuracy_step, accuracy->accuracy}, kMaxSamples);
  if (accuracy && !loss) t_.metric_rank = accuracy->rank;
}

void TimelineSampler::AddStripColumn(const JobView& v) {
  StripColumn c{v.elapsed_seconds, {}};
  bool heard = false;
  for (const RankView& r : v.ranks) {
    auto at = std::find(t_.strip_ranks.begin(), t_.strip_ranks.end(), r.rank);
    if (at == t_.strip_ranks.end()) {
      if (t_.strip_ranks.size() >= kMaxStripRanks) {
        if (strip_left_out_.insert(r.rank).second) ++t_.strip_ranks_left_out;
        continue;
      }
      at = t_.strip_ranks.insert(t_.strip_ranks.end(), r.rank);
    }
    const size_t i = static_cast<size_t>(at - t_.strip_ranks.begin());
    if (c.step_seconds.size() <= i) c.step_seconds.resize(i + 1, 0);
    c.step_seconds[i] = r.step_seconds;
    heard = heard || r.step_seconds > 0;
  }
  if (!heard) return;  // no rank has a step time yet: no column
  Thin(t_.strip, kMaxStripColumns);
  t_.strip.push_back(std::move(c));
}

void TimelineSampler::Sample(const JobView& v, const std::vector<uint32_t>& slow,
                             const std::vector<RestartCause>& restart_causes) {
  const double t = v.elapsed_seconds;
  t_.end = std::max(t_.end, t);
  if (v.snapshot_step >= 0) newest_step_seen_ = v.snapshot_step;
  if (v.snapshots_taken > saves_seen_) {  // also at the end: a short job's saves show
    saves_seen_ = v.snapshots_taken;
    AddSnapshot(t, newest_step_seen_);
  }
  // Also at the end: a restart in the job's last seconds is one the report shows.
  for (; causes_seen_ < restart_causes.size(); ++causes_seen_)
    Event({std::clamp(restart_causes[causes_seen_].t, 0.0, t), "restart", -1, "", restart_causes[causes_seen_].text});
  AddMetrics(v);  // also at the end: the last step's loss
  if (v.state == "done") return;  // the agents leave at the end: not nodes lost
  if (v.generation != generation_) {
    generation_ = v.generation;
    if (t_.generations.size() < kMaxGenerations) t_.generations.push_back({v.generation, t, 0, {}});
    else ++t_.dropped;
  }
  for (const NodeView& n : v.nodes) {
    const std::string before = state_.count(n.node) ? state_[n.node] : "";
    if (n.state == "lost" && before != "lost") Event({t, "lost", static_cast<int>(n.node), n.host, ""});
    if (n.state != "lost" && before == "lost") Event({t, "rejoined", static_cast<int>(n.node), n.host, ""});
    state_[n.node] = n.state;
    if (n.state != "running" || t_.generations.empty() || t_.generations.back().generation != v.generation) continue;
    std::vector<uint32_t>& nodes = t_.generations.back().nodes;
    auto at = std::lower_bound(nodes.begin(), nodes.end(), n.node);
    if (at == nodes.end() || *at != n.node) nodes.insert(at, n.node);
  }
  if (!t_.generations.empty() && t_.generations.back().generation == v.generation)
    t_.generations.back().world_size = std::max(t_.generations.back().world_size, v.world_size);
  std::set<uint32_t> now(slow.begin(), slow.end());
  for (uint32_t n : now) {
    if (slow_.count(n)) continue;
    std::string host;
    for (const NodeView& nv : v.nodes)
      if (nv.node == n) host = nv.host;
    Event({t, "slow", static_cast<int>(n), host, ""});
  }
  slow_ = std::move(now);
  double sum = 0;
  bool known = false;
  for (const RankView& r : v.ranks)
    if (r.samples_per_second >= 0) sum += r.samples_per_second, known = true;
  if (known) AddSample(t, sum);
  AddStripColumn(v);
}

}  // namespace ds
