#include "runtime/comm/gloo_loop_ticker.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>

#include <gloo/transport/tcp/device.h>

#include "common/check.h"
#include "common/log.h"

namespace ds::rt {

// Owns the timerfd; the loop's thread calls handleEvents each time it
// expired. It takes itself off the loop from that thread: Gloo waits for a
// turn only when another thread does it, and once the timer is off, nothing
// would turn an idle loop for 10 ms.
class GlooLoopTicker::Handler final : public gloo::transport::tcp::Handler {
 public:
  Handler(int fd, gloo::transport::tcp::Device& device) : fd_(fd), device_(device) {}
  ~Handler() override { ::close(fd_); }
  int fd() const { return fd_; }

  void handleEvents(int /*events*/) override {
    uint64_t expirations = 0;  // level-triggered: read it, or the loop spins
    while (::read(fd_, &expirations, sizeof(expirations)) < 0 && errno == EINTR) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_ || off_) return;
    device_.unregisterDescriptor(fd_, this);  // on the loop's thread: returns at once
    off_ = true;
    cv_.notify_all();
  }

  // Returns once the loop's thread took the timer off (at its next expiry);
  // the loop never calls this handler again.
  void Stop() {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.wait(lock, [&] { return off_; });
  }

 private:
  const int fd_;
  gloo::transport::tcp::Device& device_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool off_ = false;
};

GlooLoopTicker::GlooLoopTicker(std::shared_ptr<gloo::transport::Device> device, std::chrono::microseconds period)
    : period_(period), device_(std::move(device)) {
  DS_CHECK(period.count() > 0 && period < std::chrono::seconds(1));
  auto* tcp = dynamic_cast<gloo::transport::tcp::Device*>(device_.get());
  DS_CHECK(tcp != nullptr);
  const int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) {
    DS_LOG(Warn, Comm) << "gloo: no timerfd to turn the event loop (" << std::strerror(errno)
                       << "): connecting waits for Gloo's 10 ms turns";
    return;
  }
  auto handler = std::make_unique<Handler>(fd, *tcp);
  try {
    tcp->registerDescriptor(fd, EPOLLIN, handler.get());
  } catch (const std::exception& e) {
    DS_LOG(Warn, Comm) << "gloo: cannot turn the event loop (" << e.what()
                       << "): connecting waits for Gloo's 10 ms turns";
    return;
  }
  handler_ = std::move(handler);
  Resume();
}

GlooLoopTicker::~GlooLoopTicker() {
  if (!handler_) return;
  Resume();  // what follows waits for its expiries
  if (device_.use_count() == 1) {
    // The last holder: the device's loop stops at its next turn and its
    // thread is joined, which the timer, still on the loop, brings within a
    // period (an idle loop would sleep out its 10 ms); then nothing calls
    // the handler any more.
    device_.reset();
  } else {
    handler_->Stop();
  }
  handler_.reset();
}

void GlooLoopTicker::Pause() { Arm(std::chrono::microseconds(0)); }

void GlooLoopTicker::Resume() { Arm(period_); }

void GlooLoopTicker::Arm(std::chrono::microseconds period) {
  if (!handler_) return;
  itimerspec spec{};
  spec.it_interval.tv_nsec = std::chrono::duration_cast<std::chrono::nanoseconds>(period).count();
  spec.it_value = spec.it_interval;  // zero: disarmed
  DS_CHECK(::timerfd_settime(handler_->fd(), 0, &spec, nullptr) == 0);
}

}  // namespace ds::rt
