// RelayLink: one connection through the store relay (store_relay.h), apart
// from its sockets: a client that connected to MASTER_PORT and, once rank 0's
// store listens, the upstream connection to it. Each way has a RelayDirection:
// a bounded buffer (a full one is not read: back-pressure on the sender) that
// carries the half-close (the source's EOF becomes shutdown(SHUT_WR) of the
// sink once everything before it is written). The link is finished when both
// ways have ended, on any socket error, when the client leaves before the
// upstream exists with nothing to deliver, or when the wait for the upstream
// passes its deadline. Socket-free and clock-free (times come in as
// arguments); not thread-safe: the relay's thread owns its links.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ds {

class RelayDirection {
 public:
  explicit RelayDirection(size_t capacity) : capacity_(capacity) {}

  // The source may be read: it has not ended and the buffer has room.
  bool WantsRead() const { return !source_ended_ && tail_ - head_ < capacity_; }
  // Bytes wait for the sink.
  bool WantsWrite() const { return tail_ > head_; }
  // Where the next read goes (non-empty when WantsRead); the buffer grows
  // with what it holds (from 4 KiB, doubling up to the capacity), so a
  // silent client costs no memory and a chatty one what it sent.
  std::span<uint8_t> ReadSpace();
  void Filled(size_t n) { tail_ += n; }
  void SourceEnded() { source_ended_ = true; }
  std::span<const uint8_t> Pending() const { return {buf_.data() + head_, tail_ - head_}; }
  void Written(size_t n);
  // The source ended and all of it was written: shut the sink's write side now.
  bool ShutSinkNow() const { return source_ended_ && !WantsWrite() && !sink_shut_; }
  void SinkShut() { sink_shut_ = true; }

  bool source_ended() const { return source_ended_; }
  bool finished() const { return sink_shut_; }
  size_t buffered() const { return tail_ - head_; }

 private:
  size_t capacity_;
  std::vector<uint8_t> buf_;
  size_t head_ = 0, tail_ = 0;  // pending bytes are buf_[head_, tail_)
  bool source_ended_ = false;
  bool sink_shut_ = false;
};

class RelayLink {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Accepted at some moment; waits for the upstream until `deadline`.
  RelayLink(size_t buffer_bytes, TimePoint deadline) : up_(buffer_bytes), down_(buffer_bytes), deadline_(deadline) {}

  RelayDirection& up() { return up_; }      // client -> upstream
  RelayDirection& down() { return down_; }  // upstream -> client
  const RelayDirection& up() const { return up_; }
  const RelayDirection& down() const { return down_; }

  // The upstream accepted: bytes flow both ways from now on.
  void Connected() { connected_ = true; }
  bool connected() const { return connected_; }
  // A socket failed, or the deadline passed: the link ends, `why` says so.
  void Fail(std::string why);
  // Waiting for the upstream at `now` past the deadline: Fail()s and true.
  bool Expire(TimePoint now);
  TimePoint deadline() const { return deadline_; }

  // poll() events for the client's and the upstream's socket.
  short ClientEvents() const;
  short UpstreamEvents() const;

  bool finished() const;
  const std::string& failure() const { return failure_; }  // "" unless Fail()ed

 private:
  RelayDirection up_, down_;
  TimePoint deadline_;
  bool connected_ = false;
  std::string failure_;
};

}  // namespace ds
