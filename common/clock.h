// Clock: where the launcher and the agent read the time, so that tests can
// drive it (LevelDB's Env, for time only). RealClock() is the steady clock;
// FakeClock only moves when told. Both are safe to read from any thread;
// advance a FakeClock from one thread.
#pragma once

#include <atomic>
#include <chrono>

namespace ds {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;
  virtual ~Clock() = default;
  virtual time_point Now() const = 0;
};

// The process-wide steady clock.
Clock& RealClock();

// A clock for tests: starts at an arbitrary fixed point, moves only by Advance.
class FakeClock final : public Clock {
 public:
  time_point Now() const override { return time_point(duration(now_.load())); }
  void Advance(duration d) { now_ += d.count(); }

 private:
  std::atomic<duration::rep> now_{std::chrono::duration_cast<duration>(std::chrono::hours(1)).count()};
};

// Seconds (as the job file and the command line write them) as a duration.
inline Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace ds
