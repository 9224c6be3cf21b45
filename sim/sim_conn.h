// SimConn: one client connection of the simulator (dssim) on its io_context:
// it connects from a chosen loopback source address, does the client side of
// the handshake (Hello, Challenge -> Auth, AuthOk checked), then hands every
// frame to on_frame and sends what it is given, in order. It stands in for a
// dsagent's or a worker's StoreClient connection without a thread or a
// process of its own, so that one process can hold thousands. Lifecycle:
// Start once; `on_end` runs once when the connection fails or closes (not
// after Close()). Not thread-safe: the io thread only.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "common/asio.h"
#include "wire/frame_io.h"
#include "wire/protocol.h"

namespace ds::sim {

class SimConn : public std::enable_shared_from_this<SimConn> {
 public:
  using FrameFn = std::function<void(const Frame&)>;
  using EndFn = std::function<void(const std::string& why)>;

  explicit SimConn(asio::io_context& io) : socket_(io) {}

  // Connects to `to` from `from` (port chosen at connect time, so that many
  // connections share one source address), authenticates with `key`, then
  // calls on_ready once and on_frame for every later frame.
  void Start(const asio::ip::tcp::endpoint& to, const asio::ip::address& from, msg::Hello hello, std::string key,
             std::function<void()> on_ready, FrameFn on_frame, EndFn on_end);
  void Send(wire::MsgType type, const Bytes& payload);
  // Closes at once (a process that died); on_end does not run.
  void Close();
  bool open() const { return state_ != State::kClosed; }

 private:
  enum class State { kConnecting, kChallenge, kAuthOk, kReady, kClosed };
  void ReadHeader();
  void ReadPayload(uint32_t length, wire::MsgType type);
  void OnFrame(const Frame& f);
  void WriteNext();
  void End(const std::string& why);
  void DropHandlers();

  asio::ip::tcp::socket socket_;
  State state_ = State::kConnecting;
  msg::Hello hello_;
  std::string key_;
  Bytes nonce_;
  std::function<void()> on_ready_;
  FrameFn on_frame_;
  EndFn on_end_;
  uint8_t header_[wire::kHeaderSize] = {};
  Bytes payload_;
  std::deque<Bytes> out_;
  bool writing_ = false;
};

}  // namespace ds::sim
