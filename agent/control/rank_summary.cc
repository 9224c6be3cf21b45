// RankSummaries (rank_summary.h): per rank a short deque of recent beats;
// means over the ones in the window.
#include "agent/control/rank_summary.h"

#include <algorithm>

namespace ds {

void RankSummaries::OnBeat(int rank, int64_t step, int64_t compute_micros, int64_t samples, int64_t save_stall_micros,
                           TimePoint now) {
  Rank& r = ranks_[rank];
  if (step <= r.step) return;
  if (save_stall_micros >= 0) r.save_stall_micros = save_stall_micros;
  if (r.step >= 0) {
    r.recent.push_back({now, std::chrono::duration<double>(now - r.last).count(), step - r.step,
                        compute_micros < 0 ? -1 : compute_micros / 1e6, samples < 0 ? -1 : static_cast<double>(samples)});
    if (r.recent.size() > kMaxSteps) r.recent.pop_front();
  }
  r.step = step;
  r.last = now;
  r.changed = true;
}

void RankSummaries::OnMetrics(int rank, int64_t step, double loss, double accuracy) {
  Rank& r = ranks_[rank];
  if (loss == loss && step >= r.loss_step) {
    r.loss_step = step;
    r.loss = loss;
    r.changed = true;
  }
  if (accuracy == accuracy && step >= r.accuracy_step) {
    r.accuracy_step = step;
    r.accuracy = accuracy;
    r.changed = true;
  }
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
  double seconds = 0, compute = 0, samples = 0, sampled_seconds = 0;
  int64_t steps = 0, computed = 0;
  for (const Interval& i : r.recent) {
    seconds += i.seconds;
    steps += i.steps;
    if (i.compute_seconds >= 0) {
      compute += i.compute_seconds;
      ++computed;
    }
    if (i.samples >= 0) {
      samples += i.samples;
      sampled_seconds += i.seconds;
    }
  }
  msg::RankStat s;
  s.rank = rank;
  s.step = r.step;
  s.step_micros = steps > 0 ? static_cast<int64_t>(seconds / static_cast<double>(steps) * 1e6) : 0;
  s.compute_micros = computed > 0 ? static_cast<int64_t>(compute / static_cast<double>(computed) * 1e6) : -1;
  s.samples_milli = sampled_seconds > 0 ? static_cast<int64_t>(samples / sampled_seconds * 1e3) : -1;
  s.save_stall_micros = r.save_stall_micros;
  s.loss_step = r.loss_step;
  s.loss = r.loss;
  s.accuracy_step = r.accuracy_step;
  s.accuracy = r.accuracy;
  return s;
}

}  // namespace ds
