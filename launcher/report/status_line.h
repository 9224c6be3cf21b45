// StatusLine: the one line dslaunch keeps at the bottom of a terminal (and
// writes now and then to a batch log), rendered from a JobView:
//   dslaunch 3m05s gen 1 (restarts left 2) ranks 8/8 step 1200 (slowest r5 1187) 0.051s/step 5234 samples/s snapshots 12 (newest step 1100)
// Pure functions; thread-compatible.
#pragma once

#include <string>

#include "launcher/report/job_view.h"

namespace ds {

// The line, without newline: elapsed time, generation and restarts left,
// ranks running / expected, the median step and the slowest rank's (when
// ranks reported steps; the slowest only when it lags by more than 1 % of
// the median step and more than one step), the median step time and the job's samples/s (the
// sum over ranks, when every reporting rank said); with snapshots on, the
// saves taken and the newest step a node holds.
std::string StatusLineText(const JobView& view);

// "1h02m", "3m05s", "42s".
std::string ElapsedText(double seconds);

}  // namespace ds
