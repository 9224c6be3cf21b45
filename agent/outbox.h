// Outbox: the frames the agent has yet to write to the coordinator. The
// event loop never blocks on the coordinator socket: Send() queues a frame
// and writes what the socket takes now, POLLOUT writes the rest. A Ping goes
// ahead of the queued frames (at a frame boundary), so a backlog of Output
// never delays the agent's liveness; every other frame keeps its order
// (Output lines before their worker's WorkerExited). The agent stops reading
// worker pipes while bytes() is at or above kOutboxHighWater, which is the
// back-pressure that bounds the queue. Not thread-safe.
#pragma once

#include <cstddef>
#include <deque>

#include "common/status.h"
#include "wire/frame_io.h"
#include "wire/wire_format.h"

namespace ds {

// Above this many queued bytes the agent reads no worker output.
constexpr size_t kOutboxHighWater = 256 * 1024;

class Outbox {
 public:
  // Queues one frame (a Ping ahead of the others).
  void Push(wire::MsgType type, const Bytes& payload);
  // Writes to the non-blocking `fd` until the queue is empty or the socket
  // is full. IOError ("Broken pipe") on a hard write error.
  Status Flush(int fd);
  bool empty() const { return frames_.empty(); }
  // Bytes queued and not yet written.
  size_t bytes() const { return bytes_; }
  void Clear();

 private:
  std::deque<Bytes> frames_;
  size_t front_sent_ = 0;  // bytes of frames_.front() already written
  size_t bytes_ = 0;
};

}  // namespace ds
