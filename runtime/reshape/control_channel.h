// ControlChannel: dstrain's end of its agent's control channel
// (DSLAUNCH_CONTROL_FD, one end of a SOCK_SEQPACKET socketpair the agent made
// at spawn; wire_format.md "In-place recovery"). A reader thread takes one
// frame (wire header + payload) per packet; on WorkerReshape it records the
// request and aborts every communicator the trainer has registered with
// Watch, so a collective in flight on the training thread throws CommError
// at once. The training thread then sees requested() (a reshape, not a
// failure), Take()s the newest request and answers it with Answer().
//
// End of file on the channel: the agent is gone; the reader stops and the
// worker carries on as before (the agent's death kills its workers anyway).
// A frame that does not decode is logged and skipped.
// Thread-safe: Watch/Unwatch/requested/Take/Answer from any thread; the
// reader is internal and lets no exception escape. The channel owns the fd.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "wire/protocol.h"

namespace ds::rt {

struct ReshapeRequest {
  msg::WorkerReshape reshape;
  std::chrono::steady_clock::time_point received;  // when the reader took it off the channel
};

class ControlChannel {
 public:
  // Takes `fd` (from `origin`, e.g. "DSLAUNCH_CONTROL_FD=5") and starts the
  // reader. InvalidArgument naming `origin` when fd is not an open
  // SOCK_SEQPACKET socket; IOError when the reader cannot be set up.
  static Result<std::unique_ptr<ControlChannel>> Open(int fd, const std::string& origin);
  ~ControlChannel();  // stops the reader, closes the fd
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // `comm` is aborted when a reshape arrives (at once if one is already
  // waiting to be taken). Unwatch before destroying it.
  void Watch(Communicator* comm);
  void Unwatch(Communicator* comm);

  // Whether a WorkerReshape arrived that was not yet taken.
  bool requested() const { return requested_; }
  // Waits until a request is waiting to be taken, the agent closed the
  // channel, `also` holds (checked again at each Wake), or `deadline`
  // (time_point::max(): none); whether a request is waiting. A worker whose
  // peer died waits here: its agent may yet reshape it in place.
  bool WaitForRequest(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& also = nullptr);
  void Wake();
  // The newest request not yet taken (an older one it replaced is gone);
  // nullopt when none.
  std::optional<ReshapeRequest> Take();
  // Sends the answer to a reshape. IOError naming the channel when the
  // agent cannot be told (it is gone).
  Status Answer(const msg::WorkerReshaped& answer);

 private:
  ControlChannel(int fd, int wake_read, int wake_write, std::string origin);
  void ReadLoop();
  void OnPacket(const uint8_t* data, size_t n);

  const int fd_;
  const int wake_read_, wake_write_;  // a pipe: the destructor wakes the reader
  const std::string origin_;
  std::mutex mu_;
  std::set<Communicator*> watched_;
  std::condition_variable cv_;  // a request arrived, or the channel ended
  std::optional<ReshapeRequest> pending_;
  bool closed_ = false;          // the agent closed its end
  std::atomic<bool> requested_{false};
  std::mutex send_mu_;
  std::thread reader_;
};

}  // namespace ds::rt
