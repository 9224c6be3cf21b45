// AgentLink: how the job's state machine (JobControl) talks to one agent:
// send a frame, close the link. The coordinator's FrameConn implements it
// over TCP; tests use an in-process fake that records what was sent. Not
// thread-safe: the coordinator's io thread only.
#pragma once

#include <cstddef>
#include <string>

#include "wire/frame_io.h"

namespace ds {

class AgentLink {
 public:
  virtual ~AgentLink() = default;
  // Queues one frame; a closed link drops it.
  virtual void Send(wire::MsgType type, const Bytes& payload) = 0;
  // Closes after the queued frames are written (flush) or at once. Idempotent.
  virtual void Close(const std::string& reason, bool flush = false) = 0;
  virtual bool closed() const = 0;
  // Bytes queued and not yet written (a reader that falls behind grows it).
  virtual size_t queued_bytes() const { return 0; }
};

}  // namespace ds
