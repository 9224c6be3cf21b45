#include "launcher/coordinator/frame_conn.h"

#include <algorithm>

#include <fmt/format.h>

namespace ds {
namespace {

constexpr size_t kReadChunk = 64 * 1024;  // payload bytes read (and allocated) per step

}  // namespace

FrameConn::FrameConn(asio::ip::tcp::socket socket, std::string peer)
    : socket_(std::move(socket)), peer_(std::move(peer)) {
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

void FrameConn::Start(FrameHandler on_frame, CloseHandler on_close) {
  on_frame_ = std::move(on_frame);
  on_close_ = std::move(on_close);
  ReadHeader();
}

void FrameConn::ReadHeader() {
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(header_, sizeof(header_)),
                   [this, self](boost::system::error_code ec, size_t n) {
                     if (closed_) return;
                     if (ec) {
                       if (ec == asio::error::eof && n == 0) return Finish("connection closed by peer");
                       if (n > 0) return Finish(fmt::format("truncated frame header ({} of 12 bytes)", n));
                       return Finish(ec.message());
                     }
                     auto h = DecodeHeader(header_, max_payload_);
                     if (!h.ok()) return Finish(h.status().message());
                     ReadPayload(*h);
                   });
}

// Reads the rest of h's payload, kReadChunk at a time; payload_ holds what
// has arrived (empty at the first call: the last frame's buffer was moved out).
void FrameConn::ReadPayload(FrameHeader h) {
  const size_t have = payload_.size();
  if (have == h.length) {
    Frame f{h.type, std::move(payload_)};
    payload_ = Bytes();
    on_frame_(std::move(f));
    if (!closed_) ReadHeader();
    return;
  }
  const size_t want = std::min<size_t>(h.length - have, kReadChunk);
  payload_.resize(have + want);
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(payload_.data() + have, want),
                   [this, self, h, have](boost::system::error_code ec, size_t n) {
                     if (closed_) return;
                     if (ec) return Finish(fmt::format("truncated frame ({} of {} payload bytes)", have + n, h.length));
                     ReadPayload(h);
                   });
}

void FrameConn::Send(wire::MsgType type, const Bytes& payload) {
  if (closed_ || closing_) return;
  out_.push_back(EncodeFrame(type, payload));
  queued_ += out_.back().size();
  if (!writing_) WriteNext();
}

void FrameConn::WriteNext() {
  if (out_.empty()) {
    writing_ = false;
    if (closing_) Finish(close_reason_);
    return;
  }
  writing_ = true;
  auto self = shared_from_this();
  asio::async_write(socket_, asio::buffer(out_.front()), [this, self](boost::system::error_code ec, size_t) {
    if (closed_) return;
    if (ec) return Finish("write failed: " + ec.message());
    queued_ -= out_.front().size();
    out_.pop_front();
    WriteNext();
  });
}

void FrameConn::Close(const std::string& reason, bool flush) {
  if (closed_) return;
  if (flush && writing_) {
    closing_ = true;
    close_reason_ = reason;
    return;
  }
  Finish(reason);
}

void FrameConn::Finish(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  out_.clear();
  queued_ = 0;
  CloseHandler cb = std::move(on_close_);
  on_close_ = nullptr;
  // on_frame_ may be running right now (a handler that closed us): drop it
  // later, which also breaks any reference cycle through its captures.
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->on_frame_ = nullptr; });
  if (cb) cb(reason);
}

}  // namespace ds
