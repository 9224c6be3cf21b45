// The control channel between the agent and one of its workers (in-place
// recovery, wire_format.md "In-place recovery"): a socketpair(AF_UNIX,
// SOCK_SEQPACKET), one frame (the wire header and payload) per packet, no
// handshake (only the agent holds the other end). The agent keeps end 0;
// end 1 becomes the worker's DSLAUNCH_CONTROL_FD (kControlFd in the worker,
// worker_process.cc). Pure functions on fds; thread-safe as far as the fd is.
#pragma once

#include <optional>
#include <utility>

#include "common/status.h"
#include "common/unique_fd.h"
#include "wire/frame_io.h"

namespace ds {

// The descriptor number the worker finds its end at.
constexpr int kControlFd = 3;
// A packet larger than this is refused (the control frames are small).
constexpr size_t kMaxControlPacket = 64 * 1024;

// The pair, both ends close-on-exec; [0] the agent's (non-blocking), [1] the worker's.
Result<std::pair<UniqueFd, UniqueFd>> OpenControlPair();
// Sends one frame as one packet without blocking (and without SIGPIPE):
// error when the peer is gone or its queue is full.
Status SendControlFrame(int fd, wire::MsgType type, const Bytes& payload);
// Reads one packet if one is waiting: the frame, nullopt when none is;
// error at the end (the peer closed) or on a packet that is not one frame.
Result<std::optional<Frame>> ReadControlFrame(int fd);

}  // namespace ds
