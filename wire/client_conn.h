// Blocking client side of a dslaunch connection: TCP connect with a timeout
// (optionally from a given local address) and the HMAC handshake of
// wire_format.md. Used by StoreClient and dsagent. Functions are thread-safe;
// the returned fd belongs to the caller (UniqueFd closes it).
#pragma once

#include <string>
#include <utility>

#include "common/unique_fd.h"
#include "wire/frame_io.h"
#include "wire/protocol.h"
#include "wire/socket_cancel.h"

namespace ds {

// Splits "host:port" or "[v6]:port". InvalidArgument names the text.
Result<std::pair<std::string, int>> SplitHostPort(const std::string& addr);

// Connects to "host:port" (numeric or resolvable host). `bind_addr` ("" =
// any) is the local address to connect from. Errors: "<addr>: connection
// refused", "<addr>: timed out after Ns". With `cancel`, the socket is
// attached to it while connecting (a Cancel() ends the connect at once);
// the caller attaches the returned one again for what follows.
Result<UniqueFd> ConnectTcp(const std::string& addr, const std::string& bind_addr, Deadline deadline,
                            SocketCancel* cancel = nullptr);

// Runs the client handshake on `fd` with `key` (secret or store token).
// PermissionDenied when the server refuses the proof or answers with a bad
// server proof; the server's Error message is kept (escaped). Until the
// server's proof, a frame above wire::kMaxHandshakeReply bytes is refused
// unread.
Status ClientHandshake(int fd, const msg::Hello& hello, const std::string& key, Deadline deadline);

// The server side of the same handshake, blocking (dsagent's shard server;
// the coordinator runs its own on Asio): the Hello must carry `role` and
// `job_id`, the proof must be made with `key`. A refusal is sent as an
// Error frame and returned (PermissionDenied for a wrong key or job).
Result<msg::Hello> ServerHandshake(int fd, wire::Role role, const std::string& job_id, const std::string& key,
                                   Deadline deadline);

// OK when `f` is a frame of type `want`; an Error frame becomes its message,
// Printable() (PermissionDenied for kAuth), other types an IOError naming
// `stage`.
Status ExpectFrame(const Result<Frame>& f, wire::MsgType want, const char* stage);

}  // namespace ds
