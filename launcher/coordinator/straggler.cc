// StragglerDetector (straggler.h): per node, its slowest rank against the
// median of every other node's ranks, computed from one sorted vector of all
// ranks' values by binary search (O(n log n) per judgement, whatever the
// number of nodes); then a two-state hysteresis per node.
#include "launcher/coordinator/straggler.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/log.h"

namespace ds {
namespace {

// The median (the upper one of an even count) of sorted `all` less the
// values of sorted `mine` (a part of `all`); -1 when nothing is left.
double MedianWithout(const std::vector<double>& all, const std::vector<double>& mine) {
  const size_t rest = all.size() - mine.size();
  if (rest == 0) return -1;
  const size_t want = rest / 2 + 1;  // values of the rest at or below the median
  size_t lo = 0, hi = all.size() - 1;
  while (lo < hi) {  // the first all[p] with want values of the rest at or below it
    const size_t mid = (lo + hi) / 2;
    const size_t in_all = std::upper_bound(all.begin(), all.end(), all[mid]) - all.begin();
    const size_t in_mine = std::upper_bound(mine.begin(), mine.end(), all[mid]) - mine.begin();
    if (in_all - in_mine >= want) hi = mid;
    else lo = mid + 1;
  }
  return all[lo];
}

bool Unset(std::chrono::steady_clock::time_point t) { return t == std::chrono::steady_clock::time_point{}; }

}  // namespace

std::string RankRanges(const std::vector<int32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

std::vector<StragglerDetector::NodeJudgement> StragglerDetector::Measure(const RankProgressView& view,
                                                                         bool* by_compute) const {
  *by_compute = true;
  for (const RankProgress& r : view.Ranks())
    if (r.step_seconds > 0 && r.compute_seconds < 0) *by_compute = false;
  std::map<uint32_t, std::vector<const RankProgress*>> by_node;
  std::vector<double> all;
  for (const RankProgress& r : view.Ranks()) {
    const double v = *by_compute ? r.compute_seconds : r.step_seconds;
    if (v < 0 || (!*by_compute && v == 0)) continue;  // not known yet
    by_node[r.node].push_back(&r);
    all.push_back(v);
  }
  std::vector<NodeJudgement> out;
  if (by_node.size() < 2) return out;  // no peers to compare with
  std::sort(all.begin(), all.end());
  for (const auto& [node, ranks] : by_node) {
    std::vector<double> mine;
    for (const RankProgress* r : ranks) mine.push_back(*by_compute ? r->compute_seconds : r->step_seconds);
    std::sort(mine.begin(), mine.end());
    const double median = MedianWithout(all, mine);
    if (median <= 0) continue;
    NodeJudgement j{node, mine.back() / median, {}};
    for (const RankProgress* r : ranks)
      if ((*by_compute ? r->compute_seconds : r->step_seconds) > (1 + opt_.factor) / 2 * median)
        j.slow.push_back(r->rank);
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<std::string> StragglerDetector::Judge(const RankProgressView& view, const std::vector<std::string>& names,
                                                  TimePoint now) {
  std::vector<std::string> lines;
  if (opt_.factor <= 0) return lines;
  bool by_compute = false;
  for (const NodeJudgement& j : Measure(view, &by_compute)) {
    DS_LOG(Debug, Coord) << "straggler: node " << j.node << " at " << j.ratio << "x the median "
                         << (by_compute ? "compute" : "step") << " time";
    std::string line = Act(j, by_compute, names, now);
    if (!line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

std::string StragglerDetector::Act(const NodeJudgement& j, bool by_compute, const std::vector<std::string>& names,
                                   TimePoint now) {
  NodeState& st = nodes_[j.node];
  const double dt = Unset(st.last) ? opt_.interval
                                   : std::min(std::chrono::duration<double>(now - st.last).count(), 2 * opt_.interval);
  st.last = now;
  const double halfway = (1 + opt_.factor) / 2;
  // Above the halfway mark counts towards a report; once reported, below it towards recovery.
  st.evidence = std::max(0.0, st.evidence + (st.reported ? halfway - j.ratio : j.ratio - halfway) * dt);
  if (st.evidence == 0) {
    st.seconds = st.ratio_sum = 0;
    return "";
  }
  st.seconds += dt;
  st.ratio_sum += j.ratio * dt;
  if (st.evidence < (opt_.factor - halfway) * opt_.window - 1e-9) return "";  // at the factor is enough
  const std::string name = j.node < names.size() ? names[j.node] : fmt::format("node {}", j.node);
  const char* what = by_compute ? "compute" : "step";
  const double mean = st.ratio_sum / st.seconds, lasted = st.seconds;
  st.reported = !st.reported;
  st.evidence = st.seconds = st.ratio_sum = 0;
  if (!st.reported) return fmt::format("recovered: {} at {:.1f}x the median {} time", name, j.ratio, what);
  return fmt::format("slow: {} (rank{} {}) {:.1f}x the median {} time for the last {:.0f} s", name,
                     j.slow.size() == 1 ? "" : "s", RankRanges(j.slow), mean, what, lasted);
}

std::vector<uint32_t> StragglerDetector::Slow() const {
  std::vector<uint32_t> out;
  for (const auto& [node, st] : nodes_)
    if (st.reported) out.push_back(node);
  return out;
}

}  // namespace ds
