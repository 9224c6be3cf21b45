#include "launcher/coordinator/accept_loop.h"

#include <sys/socket.h>

#include <utility>

namespace ds {

AcceptLoop::AcceptLoop(asio::io_context& io, int max_open, std::function<void(UniqueFd)> on_accept,
                       std::function<bool()> make_room)
    : listener_(io), max_open_(max_open), on_accept_(std::move(on_accept)), make_room_(std::move(make_room)) {}

AcceptLoop::~AcceptLoop() { Stop(); }

Status AcceptLoop::Start(UniqueFd listener) {
  boost::system::error_code ec;
  listener_.assign(listener.get(), ec);
  if (ec) return Status::IOError("could not wait on the listening socket: " + ec.message());
  listener.release();
  Wait();
  return Status::OK();
}

void AcceptLoop::Closed() {
  --open_;
  Wait();
}

void AcceptLoop::Stop() {
  *alive_ = false;
  alive_ = std::make_shared<bool>(true);
  waiting_ = false;
  boost::system::error_code ignored;
  listener_.close(ignored);
}

// At most max_open_ open: past it, no wait on the listener (or, with
// make_room_, a wait that makes room when a connection arrives); the next
// Closed() resumes.
void AcceptLoop::Wait() {
  if (waiting_ || (open_ >= max_open_ && !make_room_) || !listener_.is_open()) return;
  waiting_ = true;
  listener_.async_wait(asio::posix::stream_descriptor::wait_read, [this, alive = alive_](boost::system::error_code ec) {
    if (!*alive) return;
    waiting_ = false;
    if (ec || !listener_.is_open()) return;
    if (open_ >= max_open_ && !make_room_()) return;  // nothing to close: the next Closed() resumes
    UniqueFd fd(::accept4(listener_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd.get() >= 0) {
      ++open_;
      on_accept_(std::move(fd));
    }
    Wait();
  });
}

}  // namespace ds
