// GlooLoopTicker: keeps a Gloo TCP device's event loop turning while the
// pairs of its contexts connect or close. Gloo (2022) makes the thread that
// takes a socket off the loop (a connecting pair closing its listening
// socket, a pair switched to sync mode, a pair closed) wait for the loop's
// next turn, and an idle loop turns only when its epoll_wait times out, every
// 10 ms: building one mesh of 3 ranks took 10-30 ms so, most of an in-place
// reshape. While a ticker lives, a timerfd registered with the loop wakes it
// every `period`, so such a wait is at most that; the timer takes itself off
// the loop from the loop's own thread, which Gloo does not make wait. A
// device's destruction waits for a turn too (its loop's thread is joined):
// a ticker that ends up holding the device's last reference destroys it
// while the timer still turns the loop.
// Not thread-safe; it keeps the device alive until it is destroyed, and no
// other thread may take a reference to the device meanwhile.
#pragma once

#include <chrono>
#include <memory>

namespace gloo::transport {
class Device;
}  // namespace gloo::transport

namespace ds::rt {

class GlooLoopTicker {
 public:
  static constexpr std::chrono::microseconds kPeriod{200};

  // Starts ticking `device`'s loop (Gloo's TCP device). When the timer cannot
  // be made (out of descriptors), logs why and ticks nothing: Gloo then works
  // as it always did, only slower to connect.
  explicit GlooLoopTicker(std::shared_ptr<gloo::transport::Device> device,
                          std::chrono::microseconds period = kPeriod);
  // Waits for the timer to be off the loop (its next expiry) and closes it.
  // When it holds the device's last reference, it destroys the device first
  // (Gloo joins the loop's thread at its next turn, which the timer brings).
  ~GlooLoopTicker();
  GlooLoopTicker(const GlooLoopTicker&) = delete;
  GlooLoopTicker& operator=(const GlooLoopTicker&) = delete;

  bool ticking() const { return handler_ != nullptr; }

  // Stops the timer while the caller waits for something else than the loop
  // (a rendezvous store's answer, which can take seconds: each turn costs
  // ~20 us of CPU here, 10% of a core at the default period), and starts it
  // again. The destructor starts it again if needed.
  void Pause();
  void Resume();

 private:
  class Handler;
  void Arm(std::chrono::microseconds period);
  std::chrono::microseconds period_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::unique_ptr<Handler> handler_;  // owns the timerfd; null: not ticking
};

}  // namespace ds::rt
