// RankSummaries (rank_summary.h): per rank a short deque of recent steps;
// medians by nth_element over at most kMaxSteps values.
#include "agent/rank_summary.h"

#include <algorithm>

namespace ds {
namespace {

// The median of the non-negative values (the upper one of an even count);
// -1 when there is none.
double Median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return x < 0; }), v.end());
  if (v.empty()) return -1;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

void RankSummaries::OnBeat(int rank, int64_t step, int64_t compute_micros, int64_t samples, TimePoint now) {
  Rank& r = ranks_[rank];
  if (step <= r.step) return;
  if (r.step >= 0) {
    const double advanced = static_cast<double>(step - r.step);
    const double seconds = std::chrono::duration<double>(now - r.last).count() / advanced;
    r.recent.push_back({now, seconds, compute_micros < 0 ? -1 : compute_micros / 1e6,
                        samples < 0 ? -1 : static_cast<double>(samples)});
    if (r.recent.size() > kMaxSteps) r.recent.pop_front();
  }
  r.step = step;
  r.last = now;
  r.changed = true;
}

std::vector<msg::RankStat> RankSummaries::TakeChanged(TimePoint now) {
  std::vector<msg::RankStat> out;
  for (auto& [rank, r] : ranks_) {
    if (!r.changed) continue;
    r.changed = false;
    out.push_back(Summarise(rank, r, now));
  }
  return out;
}

msg::RankStat RankSummaries::Summarise(int rank, Rank& r, TimePoint now) const {
  while (r.recent.size() > 1 && now - r.recent.front().at > window_) r.recent.pop_front();
  std::vector<double> step, compute, samples;
  for (const Interval& i : r.recent) {
    step.push_back(i.step_seconds);
    compute.push_back(i.compute_seconds);
    samples.push_back(i.samples);
  }
  msg::RankStat s;
  s.rank = rank;
  s.step = r.step;
  const double step_s = Median(step), compute_s = Median(compute), samples_per_step = Median(samples);
  s.step_micros = step_s < 0 ? 0 : static_cast<int64_t>(step_s * 1e6);
  s.compute_micros = compute_s < 0 ? -1 : static_cast<int64_t>(compute_s * 1e6);
  s.samples_milli = samples_per_step < 0 || step_s <= 0 ? -1 : static_cast<int64_t>(samples_per_step / step_s * 1e3);
  return s;
}

}  // namespace ds
