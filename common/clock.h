// The clock seam (LevelDB Env::NowMicros, ninja's fake time in tests): code
// that measures timeouts asks a Clock for "now" instead of calling
// steady_clock directly, so tests can drive time without sleeping.
// RealClock() is the process-wide steady clock, safe from any thread.
// FakeClock is for tests: Now() returns a time the test sets or advances;
// it is not thread-safe (one test thread drives it).
#pragma once

#include <chrono>

namespace ds {

class Clock {
 public:
  virtual ~Clock() = default;
  // The current time on a monotonic clock. Never fails.
  virtual std::chrono::steady_clock::time_point Now() const = 0;
};

// The real monotonic clock (std::chrono::steady_clock). Lives for the whole
// program; callers keep a reference.
Clock& RealClock();

// A clock that only moves when told to. Starts at an arbitrary fixed point
// well away from the epoch, so "now - 1 hour" is still a valid time.
class FakeClock : public Clock {
 public:
  FakeClock() = default;
  explicit FakeClock(std::chrono::steady_clock::time_point start) : now_(start) {}

  std::chrono::steady_clock::time_point Now() const override { return now_; }
  void Set(std::chrono::steady_clock::time_point t) { now_ = t; }
  void Advance(std::chrono::steady_clock::duration d) { now_ += d; }

 private:
  std::chrono::steady_clock::time_point now_{std::chrono::hours(24 * 365)};
};

}  // namespace ds
