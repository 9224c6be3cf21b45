// DeadlineTimer: one pending wake-up at a point in time. JobControl keeps one
// armed at its next deadline (a heartbeat due, an agent's silence limit, the
// register or stop-confirmation limit) instead of waking on a period. The
// coordinator's implementation is an Asio steady_timer; tests use a fake
// that fires when the fake clock passes the deadline. Not thread-safe.
#pragma once

#include <functional>

#include "common/asio.h"
#include "common/clock.h"

namespace ds {

class DeadlineTimer {
 public:
  virtual ~DeadlineTimer() = default;
  // Replaces any pending wake-up: `fire` runs once at or after `when`.
  virtual void ArmAt(Clock::time_point when, std::function<void()> fire) = 0;
  virtual void Cancel() = 0;
};

// On an io_context; `when` is read as a std::chrono::steady_clock time.
class AsioDeadlineTimer final : public DeadlineTimer {
 public:
  explicit AsioDeadlineTimer(asio::io_context& io) : timer_(io) {}
  void ArmAt(Clock::time_point when, std::function<void()> fire) override {
    timer_.expires_at(when);
    timer_.async_wait([fire = std::move(fire)](boost::system::error_code ec) {
      if (!ec) fire();
    });
  }
  void Cancel() override { timer_.cancel(); }

 private:
  asio::steady_timer timer_;
};

}  // namespace ds
