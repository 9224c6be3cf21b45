#include "agent/outbox.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace ds {

void Outbox::Push(wire::MsgType type, const Bytes& payload) {
  Bytes frame = EncodeFrame(type, payload);
  bytes_ += frame.size();
  if (type == wire::MsgType::kPing) {
    // Not into the middle of a partly written frame.
    auto at = frames_.begin() + ((front_sent_ > 0 && !frames_.empty()) ? 1 : 0);
    frames_.insert(at, std::move(frame));
  } else {
    frames_.push_back(std::move(frame));
  }
}

Status Outbox::Flush(int fd) {
  while (!frames_.empty()) {
    const Bytes& f = frames_.front();
    ssize_t r = ::send(fd, f.data() + front_sent_, f.size() - front_sent_, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::OK();
      return Status::IOError(std::strerror(errno));
    }
    front_sent_ += static_cast<size_t>(r);
    bytes_ -= static_cast<size_t>(r);
    if (front_sent_ == f.size()) {
      frames_.pop_front();
      front_sent_ = 0;
    }
  }
  return Status::OK();
}

void Outbox::Clear() {
  frames_.clear();
  front_sent_ = 0;
  bytes_ = 0;
}

}  // namespace ds
