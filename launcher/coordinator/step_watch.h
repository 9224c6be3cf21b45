// StepWatch: says, once per generation, that the detectors the job turned on
// have nothing to watch because no rank reports steps. hang_factor (the
// HangDetector) and hang_timeout (the agents' per-worker limit) judge step
// beats only; a worker that never beats is never judged hung, so without a
// line a stuck job looks healthy ("ranks 2/2", no step). The line comes
// once the generation has run for the detector's own limit (hang_floor, or
// hang_timeout, whichever is shorter; at least kStepWatchMinSeconds, as
// importing torch and forming the group take seconds, and at most
// kStepWatchMaxSeconds) with no step from any rank. Pure logic on given times; JobControl calls Judge()
// from its timer (at least once per heartbeat interval). Not thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "launcher/coordinator/rank_progress.h"

namespace ds {

inline constexpr double kStepWatchMinSeconds = 20;
inline constexpr double kStepWatchMaxSeconds = 60;

struct StepWatchOptions {
  double hang_factor = 0;   // elastic.hang_factor; 0 = off
  double hang_floor = 30;   // elastic.hang_floor
  double hang_timeout = 0;  // elastic.hang_timeout; 0 = off
};

class StepWatch {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit StepWatch(StepWatchOptions options) : opt_(options) {}

  // At `now`, in `generation` (a new number starts the wait afresh): the one
  // line once no rank has reported a step for the wait, else nullopt (also
  // when no detector is on, or it was said for this generation).
  std::optional<std::string> Judge(const RankProgressView& view, int generation, TimePoint now);
  // How long a generation may run without a step before the line; 0 = never.
  double wait_seconds() const;

 private:
  StepWatchOptions opt_;
  int generation_ = -1;
  TimePoint since_{};
  bool said_ = false;
};

}  // namespace ds
