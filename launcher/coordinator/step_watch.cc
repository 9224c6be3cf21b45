// StepWatch (step_watch.h).
#include "launcher/coordinator/step_watch.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ds {

double StepWatch::wait_seconds() const {
  double wait = std::numeric_limits<double>::infinity();
  if (opt_.hang_factor > 0) wait = std::min(wait, opt_.hang_floor);
  if (opt_.hang_timeout > 0) wait = std::min(wait, opt_.hang_timeout);
  if (wait == std::numeric_limits<double>::infinity()) return 0;
  return std::clamp(wait, kStepWatchMinSeconds, kStepWatchMaxSeconds);
}

std::optional<std::string> StepWatch::Judge(const RankProgressView& view, int generation, TimePoint now) {
  const double wait = wait_seconds();
  if (wait <= 0) return std::nullopt;
  if (generation != generation_) {
    generation_ = generation;
    since_ = now;
    said_ = false;
  }
  if (said_) return std::nullopt;
  for (const RankProgress& r : view.Ranks())
    if (r.step >= 0) {
      said_ = true;  // steps come: nothing to say this generation
      return std::nullopt;
    }
  const double ran = std::chrono::duration<double>(now - since_).count();
  if (ran < wait) return std::nullopt;
  said_ = true;
  std::vector<std::string> on;
  if (opt_.hang_factor > 0) on.push_back("hang_factor");
  if (opt_.hang_timeout > 0) on.push_back("hang_timeout");
  return fmt::format(
      "no rank has reported a step in generation {}'s first {:g} s, so {} {} nothing to watch: step beats "
      "come from a Python worker's torch.optim step (the dslaunch package, on its path unless python -I or -E, "
      "or DSLAUNCH_PYTHON_PACKAGE=0), from dslaunch.step(), or from a program's own beats (docs/usage.md, "
      "\"Step heartbeats from your own script\")",
      generation, wait, fmt::join(on, " and "), on.size() > 1 ? "have" : "has");
}

}  // namespace ds
