#include "runtime/progress.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ds::rt {

Progress::Progress(std::FILE* out, const ProgressOptions& options)
    : out_(out), options_(options), start_(std::chrono::steady_clock::now()) {}

std::string Progress::FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

void Progress::Step(int64_t epoch, int64_t step, double loss, double samples_per_s) {
  if (first_step_ < 0) first_step_ = options_.start_step;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int64_t done = step - first_step_;
  const int64_t total = std::max<int64_t>(options_.total_steps, step);
  const double eta = done > 0 ? elapsed / done * (total - step) : NAN;
  const double frac = total > 0 ? double(step) / total : 0;
  const std::string text =
      fmt::format("step {}/{} loss {:.4f} {:.0f} samples/s ETA {}", step, total, loss,
                  samples_per_s, FormatDuration(eta));
  if (options_.tty) {
    const int width = 20, filled = static_cast<int>(frac * width);
    fmt::print(out_, "\r\033[Kepoch {}/{} [{}{}] {:3.0f}% {}", epoch + 1, options_.epochs,
               std::string(filled, '#'), std::string(width - filled, '-'), frac * 100, text);
    bar_open_ = true;
  } else if (step % std::max<int64_t>(1, options_.interval) == 0 || step == total) {
    fmt::print(out_, "epoch {}/{} {}\n", epoch + 1, options_.epochs, text);
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
