// FrameConn: one framed connection on the coordinator's io_context (Boost.Asio,
// single thread). Reads frames forever and hands each to on_frame; validates
// every header before reading a payload (bad magic/version or a length above
// max_payload() closes the connection without reading further), and grows
// the payload buffer only as bytes arrive (kReadChunk at a time), so a header
// announcing 16 MiB costs nothing until 16 MiB come. Send()
// queues frames in order. Lifecycle: kOpen -> kClosed, once; on_close runs
// exactly once with the reason. Not thread-safe: use from the io thread only.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "common/asio.h"
#include "launcher/coordinator/agent_link.h"
#include "wire/frame_io.h"

namespace ds {

class FrameConn final : public AgentLink, public std::enable_shared_from_this<FrameConn> {
 public:
  using FrameHandler = std::function<void(Frame)>;
  using CloseHandler = std::function<void(const std::string& reason)>;

  FrameConn(asio::ip::tcp::socket socket, std::string peer);

  // Starts reading. Handlers may call Send/Close and may drop the last
  // external reference (the read loop keeps the connection alive).
  void Start(FrameHandler on_frame, CloseHandler on_close);
  // The largest payload the next headers may announce (default
  // wire::kMaxPayload; the coordinator lowers it until the peer authenticates).
  void set_max_payload(uint32_t bytes) { max_payload_ = bytes; }
  uint32_t max_payload() const { return max_payload_; }
  void Send(wire::MsgType type, const Bytes& payload) override;
  // Closes after the queued frames are written (graceful) or at once.
  void Close(const std::string& reason, bool flush = false) override;
  bool closed() const override { return closed_; }
  size_t queued_bytes() const override { return queued_; }
  const std::string& peer() const { return peer_; }

 private:
  void ReadHeader();
  void ReadPayload(FrameHeader h);
  void WriteNext();
  void Finish(const std::string& reason);

  asio::ip::tcp::socket socket_;
  std::string peer_;
  FrameHandler on_frame_;
  CloseHandler on_close_;
  uint8_t header_[wire::kHeaderSize] = {};
  uint32_t max_payload_ = wire::kMaxPayload;
  Bytes payload_;  // the payload bytes received so far
  std::deque<Bytes> out_;
  size_t queued_ = 0;  // bytes in out_
  bool writing_ = false;
  bool closing_ = false;  // close once out_ drains
  bool closed_ = false;
  std::string close_reason_;
};

}  // namespace ds
