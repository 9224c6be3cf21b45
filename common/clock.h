// The clock seam (LevelDB's Env, for time only): code that measures timeouts
// asks a Clock for "now" instead of calling steady_clock directly, so tests
// drive time without sleeping. RealClock() is the process-wide steady clock,
// safe from any thread. FakeClock only moves when told; one test thread
// drives it (not thread-safe).
#pragma once

#include <chrono>

namespace ds {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;
  virtual ~Clock() = default;
  // The current time on a monotonic clock. Never fails.
  virtual time_point Now() const = 0;
};

// The real monotonic clock (std::chrono::steady_clock). Lives for the whole
// program; callers keep a reference.
Clock& RealClock();

// Starts at an arbitrary fixed point well away from the epoch, so that
// "now - 1 hour" is still a valid time.
class FakeClock final : public Clock {
 public:
  FakeClock() = default;
  explicit FakeClock(time_point start) : now_(start) {}
  time_point Now() const override { return now_; }
  void Set(time_point t) { now_ = t; }
  void Advance(duration d) { now_ += d; }

 private:
  time_point now_{std::chrono::hours(24 * 365)};
};

// Seconds, as the job file and the command line write them, as a duration.
// Saturates at about 31 years (the conversion of a larger double to the
// clock's int64 nanoseconds would overflow); NaN and negatives are 0.
inline Clock::duration Seconds(double s) {
  if (!(s > 0)) return Clock::duration::zero();
  if (s > 1e9) s = 1e9;
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace ds
