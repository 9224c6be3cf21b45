// HangDetector (hang_detector.h): one pass over the view per judgement.
#include "launcher/coordinator/hang_detector.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace ds {

std::optional<std::string> HangDetector::Judge(const RankProgressView& view, int world_size, TimePoint now) {
  if (!on() || said_ || world_size <= 0) return std::nullopt;
  const std::vector<RankProgress>& ranks = view.Ranks();
  if (ranks.size() < static_cast<size_t>(world_size)) return std::nullopt;  // not every rank stepped yet
  TimePoint last{};
  std::vector<double> steps;
  for (const RankProgress& r : ranks) {
    last = std::max(last, r.heard);
    if (r.step_seconds > 0) steps.push_back(r.step_seconds);
  }
  double median = 0;
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + static_cast<ptrdiff_t>(steps.size() / 2), steps.end());
    median = steps[steps.size() / 2];
  }
  const double threshold = std::max(opt_.factor * median, opt_.floor);
  const double silent = std::chrono::duration<double>(now - last).count();
  if (silent < threshold) return std::nullopt;
  said_ = true;
  const std::string step = median < 1 ? fmt::format("{:.1f} ms", median * 1e3) : fmt::format("{:.2f} s", median);
  return fmt::format("hang: no rank advanced for {:.1f} s (threshold {:g} x the median step time {}, at least {:g} s); "
                     "taking every rank's stacks",
                     silent, opt_.factor, step, opt_.floor);
}

}  // namespace ds
