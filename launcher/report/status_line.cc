#include "launcher/report/status_line.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace ds {
namespace {

// The median of `v` (not empty); the upper one of an even count.
template <typename T>
T Median(std::vector<T> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

std::string StepsText(const JobView& view) {
  std::vector<int64_t> steps;
  std::vector<double> times;
  double samples = 0;
  bool samples_known = false, samples_all = true;
  const RankView* slowest = nullptr;
  for (const RankView& r : view.ranks) {
    if (r.step < 0) continue;
    steps.push_back(r.step);
    if (r.step_seconds > 0) times.push_back(r.step_seconds);
    if (r.samples_per_second >= 0) samples += r.samples_per_second, samples_known = true;
    else samples_all = false;
    if (slowest == nullptr || r.step < slowest->step) slowest = &r;
  }
  if (steps.empty()) return "";
  const int64_t median = Median(steps);
  std::string s = fmt::format(" step {}", median);
  // Agents report at their own heartbeats, so ranks in step differ by what
  // a heartbeat's time makes: only a lag past 1 % of the step (and 1) is news.
  if (median - slowest->step > std::max<int64_t>(1, median / 100))
    s += fmt::format(" (slowest r{} {})", slowest->rank, slowest->step);
  if (!times.empty()) s += fmt::format(" {:.3g}s/step", Median(times));
  if (samples_known && samples_all) s += fmt::format(" {:.0f} samples/s", samples);
  return s;
}

}  // namespace

std::string ElapsedText(double seconds) {
  const int64_t s = std::isfinite(seconds) && seconds > 0 ? static_cast<int64_t>(seconds) : 0;
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string StatusLineText(const JobView& view) {
  std::string s = fmt::format("dslaunch {} gen {} (restarts left {}) ranks {}/{}", ElapsedText(view.elapsed_seconds),
                              view.generation, std::max(0, view.max_restarts - view.restarts), view.ranks_running,
                              view.world_size);
  if (view.state != "running") s += " " + view.state;
  s += StepsText(view);
  if (view.snapshots) {
    s += fmt::format(" snapshots {}", view.snapshots_taken);
    if (view.snapshot_step >= 0) s += fmt::format(" (newest step {})", view.snapshot_step);
    if (view.steps_at_risk >= 0) s += fmt::format(" at risk {} steps", view.steps_at_risk);
  }
  return s;
}

}  // namespace ds
