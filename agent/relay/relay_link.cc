#include "agent/relay/relay_link.h"

#include <algorithm>
#include <cstring>

namespace ds {

std::span<uint8_t> RelayDirection::ReadSpace() {
  if (head_ > 0 && tail_ == buf_.size()) {  // room only before the pending bytes: move them to the front
    std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
    tail_ -= head_;
    head_ = 0;
  }
  // The buffer grows with what is held (4 KiB, doubling up to capacity): a
  // client that sent a few bytes costs a few KiB, not the whole capacity.
  if (tail_ == buf_.size() && buf_.size() < capacity_)
    buf_.resize(std::min(capacity_, std::max<size_t>(4096, 2 * buf_.size())));
  return {buf_.data() + tail_, buf_.size() - tail_};
}

void RelayDirection::Written(size_t n) {
  head_ += n;
  if (head_ == tail_) head_ = tail_ = 0;
}

void RelayLink::Fail(std::string why) {
  if (failure_.empty()) failure_ = why.empty() ? "failed" : std::move(why);
}

bool RelayLink::Expire(TimePoint now) {
  if (connected_ || finished() || now < deadline_) return false;
  Fail("rank 0's store did not listen in time");
  return true;
}

short RelayLink::ClientEvents() const {
  short ev = up_.WantsRead() ? POLLIN : 0;
  if (down_.WantsWrite()) ev |= POLLOUT;
  return ev;
}

short RelayLink::UpstreamEvents() const {
  if (!connected_) return POLLOUT;  // the connect in flight completes
  short ev = down_.WantsRead() ? POLLIN : 0;
  if (up_.WantsWrite()) ev |= POLLOUT;
  return ev;
}

bool RelayLink::finished() const {
  if (!failure_.empty()) return true;
  if (up_.finished() && down_.finished()) return true;
  // The client left before there was anyone to talk to, and said nothing.
  return !connected_ && up_.source_ended() && up_.buffered() == 0;
}

}  // namespace ds
