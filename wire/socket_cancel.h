// SocketCancel: lets one thread cut short the socket exchange another thread
// is blocked in (a TCP connect, a read or a write with a deadline):
// Cancel() shuts the attached socket down, so the blocked call returns an
// error at once (a connect in progress is disconnected), and every socket
// attached later is shut down as it is attached, until Reset(). The blocked
// side attaches its socket right after creating it and detaches it before
// closing it, so a cancel never reaches a descriptor number reused by
// someone else. Thread-safe.
#pragma once

#include <sys/socket.h>

#include <mutex>

namespace ds {

class SocketCancel {
 public:
  void Attach(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    fd_ = fd;
    if (cancelled_) ::shutdown(fd_, SHUT_RDWR);
  }
  void Detach() {
    std::lock_guard<std::mutex> lock(mu_);
    fd_ = -1;
  }
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = false;
  }
  bool cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }

 private:
  mutable std::mutex mu_;
  int fd_ = -1;
  bool cancelled_ = false;
};

// Detaches on scope exit: declare it after the UniqueFd it guards, so it
// runs before the descriptor is closed.
class SocketCancelScope {
 public:
  SocketCancelScope(SocketCancel* c, int fd) : c_(c) {
    if (c_) c_->Attach(fd);
  }
  ~SocketCancelScope() {
    if (c_) c_->Detach();
  }
  SocketCancelScope(const SocketCancelScope&) = delete;
  SocketCancelScope& operator=(const SocketCancelScope&) = delete;

 private:
  SocketCancel* c_;
};

}  // namespace ds
