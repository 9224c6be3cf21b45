// Progress: what the user sees from rank 0 while dstrain trains. On a TTY, a
// one-line bar redrawn in place:
//   [#########-----------]  45% step 420/930 epoch 5/10 loss 0.4123 5234 samples/s ETA 1m42s
// otherwise (logs, dslaunch's per-rank pipes) plain lines at most every
// `interval` steps. Epoch results (test accuracy) are always their own line.
//
// Honest about how far the run is: steps of the run's real total, the epoch
// count those steps span (not trainer.epochs, which max_steps alone sets to a
// bound that never binds), and an ETA from this process's own pace: the
// steps it made since it started (the Progress's construction), so the steps
// a resumed run (a restart) inherited do not count as speed.
// Not thread-safe; writes only to the given stream; borrows the clock.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/clock.h"

namespace ds::rt {

struct ProgressOptions {
  bool tty = false;              // redraw one line with \r
  int64_t interval = 50;         // steps between plain lines (non-TTY)
  int64_t total_steps = 0;       // the run's last step: for the bar, the epochs and the ETA
  int64_t steps_per_epoch = 0;   // 0: no epoch in the line
  int64_t start_step = 0;        // steps already done when this process started (a resumed run)
};

class Progress {
 public:
  Progress(std::FILE* out, const ProgressOptions& options, const Clock& clock = RealClock());

  // After step `step` (1-based, counted from the run's start, resumed steps
  // included).
  void Step(int64_t step, double loss, double samples_per_s);
  // A line of its own (epoch summaries), keeping the bar intact on a TTY.
  void Line(const std::string& text);
  // Ends the bar line (TTY).
  void Finish();

  // The text after the bar: "step 420/930 epoch 5/10 loss 0.4123 5234 samples/s ETA 1m42s".
  std::string Text(int64_t step, double loss, double samples_per_s) const;
  // Seconds left at this process's pace; NaN before its first step (or any time).
  double EtaSeconds(int64_t step) const;

  // "1h02m", "3m05s", "42s"; "?" for NaN or negative.
  static std::string FormatDuration(double seconds);

 private:
  std::FILE* out_;
  ProgressOptions options_;
  const Clock& clock_;
  Clock::time_point start_;        // when this process's steps began
  bool bar_open_ = false;
};

}  // namespace ds::rt
