#include "sim/sim_conn.h"

#include <netinet/in.h>

#include <fmt/format.h>

#include "wire/hmac_auth.h"

namespace ds::sim {

void SimConn::Start(const asio::ip::tcp::endpoint& to, const asio::ip::address& from, msg::Hello hello,
                    std::string key, std::function<void()> on_ready, FrameFn on_frame, EndFn on_end) {
  hello_ = std::move(hello);
  key_ = std::move(key);
  on_ready_ = std::move(on_ready);
  on_frame_ = std::move(on_frame);
  on_end_ = std::move(on_end);
  boost::system::error_code ec;
  socket_.open(to.protocol(), ec);
  if (!ec) {
    // The port is picked by connect() from the whole 4-tuple, not by bind():
    // tens of thousands of connections fit behind one source address.
    int one = 1;
    ::setsockopt(socket_.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
    socket_.bind(asio::ip::tcp::endpoint(from, 0), ec);
  }
  if (ec) return End("socket: " + ec.message());
  auto self = shared_from_this();
  socket_.async_connect(to, [this, self](boost::system::error_code cec) {
    if (state_ == State::kClosed) return;
    if (cec) return End("connect: " + cec.message());
    boost::system::error_code nec;
    socket_.set_option(asio::ip::tcp::no_delay(true), nec);
    state_ = State::kChallenge;
    Send(wire::MsgType::kHello, hello_.Encode());
    ReadHeader();
  });
}

void SimConn::ReadHeader() {
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(header_), [this, self](boost::system::error_code ec, size_t) {
    if (state_ == State::kClosed) return;
    if (ec) return End(ec == asio::error::eof ? "closed by the coordinator" : ec.message());
    auto h = DecodeHeader(header_);
    if (!h.ok()) return End(h.status().message());
    ReadPayload(h->length, h->type);
  });
}

void SimConn::ReadPayload(uint32_t length, wire::MsgType type) {
  payload_.resize(length);
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(payload_), [this, self, type](boost::system::error_code ec, size_t) {
    if (state_ == State::kClosed) return;
    if (ec) return End("truncated frame: " + ec.message());
    OnFrame(Frame{type, std::move(payload_)});
    payload_ = Bytes();
    if (state_ != State::kClosed) ReadHeader();
  });
}

void SimConn::OnFrame(const Frame& f) {
  if (f.type == wire::MsgType::kError && state_ != State::kReady) {
    auto e = msg::Error::Decode(f.payload);
    return End("refused: " + (e.ok() ? e->message : std::string("?")));
  }
  switch (state_) {
    case State::kChallenge: {
      auto c = msg::Challenge::Decode(f.payload);
      if (f.type != wire::MsgType::kChallenge || !c.ok()) return End("expected a Challenge");
      nonce_ = c->nonce;
      state_ = State::kAuthOk;
      return Send(wire::MsgType::kAuth, msg::Auth{ClientProof(key_, nonce_)}.Encode());
    }
    case State::kAuthOk: {
      auto ok = msg::AuthOk::Decode(f.payload);
      if (f.type != wire::MsgType::kAuthOk || !ok.ok() || !MacEquals(ok->mac, ServerProof(key_, nonce_)))
        return End("the coordinator's AuthOk does not prove the key");
      state_ = State::kReady;
      if (on_ready_) on_ready_();
      return;
    }
    case State::kReady:
      if (on_frame_) on_frame_(f);
      return;
    case State::kConnecting:
    case State::kClosed:
      return;
  }
}

void SimConn::Send(wire::MsgType type, const Bytes& payload) {
  if (state_ == State::kClosed) return;
  out_.push_back(EncodeFrame(type, payload));
  if (!writing_) WriteNext();
}

void SimConn::WriteNext() {
  if (out_.empty()) {
    writing_ = false;
    return;
  }
  writing_ = true;
  auto self = shared_from_this();
  asio::async_write(socket_, asio::buffer(out_.front()), [this, self](boost::system::error_code ec, size_t) {
    if (state_ == State::kClosed) return;
    if (ec) return End("write: " + ec.message());
    out_.pop_front();
    WriteNext();
  });
}

void SimConn::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  on_end_ = nullptr;
  boost::system::error_code ec;
  socket_.close(ec);
  out_.clear();
  DropHandlers();
}

// A handler may be running now (one that closed us): drop them later, which
// also breaks reference cycles through their captures.
void SimConn::DropHandlers() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->on_ready_ = nullptr;
    self->on_frame_ = nullptr;
  });
}

void SimConn::End(const std::string& why) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  boost::system::error_code ec;
  socket_.close(ec);
  out_.clear();
  EndFn cb = std::move(on_end_);
  on_end_ = nullptr;
  DropHandlers();
  if (cb) cb(why);
}

}  // namespace ds::sim
