// Progress: what the user sees from rank 0 while dstrain trains. On a TTY, a
// one-line bar redrawn in place:
//   epoch 2/10 [#########-----------]  45% step 420/9370 loss 0.4123 5234 samples/s ETA 1m42s
// otherwise (logs, dslaunch's per-rank pipes) plain lines at most every
// `interval` steps. Epoch results (test accuracy) are always their own line.
// Not thread-safe; writes only to the given stream.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ds::rt {

struct ProgressOptions {
  bool tty = false;            // redraw one line with \r
  int64_t interval = 50;       // steps between plain lines (non-TTY)
  int64_t total_steps = 0;     // for the bar and the ETA
  int64_t start_step = 0;      // steps already done when the clock starts (resume)
  int64_t epochs = 1;
};

class Progress {
 public:
  Progress(std::FILE* out, const ProgressOptions& options);

  // After a step (the clock for the ETA started at construction).
  void Step(int64_t epoch, int64_t step, double loss, double samples_per_s);
  // A line of its own (epoch summaries), keeping the bar intact on a TTY.
  void Line(const std::string& text);
  // Ends the bar line (TTY).
  void Finish();

  // "1h02m", "3m05s", "42s".
  static std::string FormatDuration(double seconds);

 private:
  std::FILE* out_;
  ProgressOptions options_;
  std::chrono::steady_clock::time_point start_;
  int64_t first_step_ = -1;
  bool bar_open_ = false;
};

}  // namespace ds::rt
