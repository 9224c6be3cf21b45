#include "runtime/progress.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ds::rt {

Progress::Progress(std::FILE* out, const ProgressOptions& options, const Clock& clock)
    : out_(out), options_(options), clock_(clock), start_(clock.Now()) {}

std::string Progress::FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

double Progress::EtaSeconds(int64_t step) const {
  const int64_t total = std::max<int64_t>(options_.total_steps, step);
  if (step >= total) return 0;
  const int64_t done = step - options_.start_step;
  if (done <= 0) return NAN;
  const double elapsed = std::chrono::duration<double>(clock_.Now() - start_).count();
  if (elapsed <= 0) return NAN;
  return elapsed / done * (total - step);
}

std::string Progress::Text(int64_t step, double loss, double samples_per_s) const {
  const int64_t total = std::max<int64_t>(options_.total_steps, step);
  std::string epoch;
  if (options_.steps_per_epoch > 0) {
    const int64_t per = options_.steps_per_epoch;
    const int64_t epochs = (total + per - 1) / per;
    const int64_t current = std::min(epochs, std::max<int64_t>(1, (step + per - 1) / per));
    epoch = fmt::format(" epoch {}/{}", current, epochs);
  }
  return fmt::format("step {}/{}{} loss {:.4f} {:.0f} samples/s ETA {}", step, total, epoch, loss,
                     samples_per_s, FormatDuration(EtaSeconds(step)));
}

void Progress::Step(int64_t step, double loss, double samples_per_s) {
  const int64_t total = std::max<int64_t>(options_.total_steps, step);
  const std::string text = Text(step, loss, samples_per_s);
  if (options_.tty) {
    const double frac = total > 0 ? double(step) / total : 0;
    const int width = 20, filled = static_cast<int>(frac * width);
    fmt::print(out_, "\r\033[K[{}{}] {:3.0f}% {}", std::string(filled, '#'),
               std::string(width - filled, '-'), frac * 100, text);
    bar_open_ = true;
  } else if (step % std::max<int64_t>(1, options_.interval) == 0 || step == total) {
    fmt::print(out_, "{}\n", text);
  }
  std::fflush(out_);
}

void Progress::Line(const std::string& text) {
  if (bar_open_) fmt::print(out_, "\r\033[K");
  fmt::print(out_, "{}\n", text);
  bar_open_ = false;
  std::fflush(out_);
}

void Progress::Finish() {
  if (bar_open_) fmt::print(out_, "\n");
  bar_open_ = false;
  std::fflush(out_);
}

}  // namespace ds::rt
