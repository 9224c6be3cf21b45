#include "agent/workers/control_channel.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace ds {

Result<std::pair<UniqueFd, UniqueFd>> OpenControlPair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    return Status::IOError(fmt::format("control channel: socketpair: {}", std::strerror(errno)));
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

Status SendControlFrame(int fd, wire::MsgType type, const Bytes& payload) {
  const Bytes frame = EncodeFrame(type, payload);
  ssize_t n;
  do n = ::send(fd, frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(frame.size())) return Status::OK();
  if (n < 0) return Status::IOError(fmt::format("control channel: {}", std::strerror(errno)));
  return Status::IOError("control channel: short send");
}

Result<std::optional<Frame>> ReadControlFrame(int fd) {
  Bytes buf(kMaxControlPacket + 1);
  ssize_t n;
  do n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::optional<Frame>();
  if (n < 0) return Status::IOError(fmt::format("control channel: {}", std::strerror(errno)));
  if (n == 0) return Status::IOError("control channel closed by the worker");
  const size_t size = static_cast<size_t>(n);
  if (size > kMaxControlPacket || size < wire::kHeaderSize)
    return Status::InvalidArgument(fmt::format("control channel: a packet of {} bytes", size));
  DS_ASSIGN_OR_RETURN(FrameHeader h, DecodeHeader(buf.data(), static_cast<uint32_t>(kMaxControlPacket)));
  if (h.length != size - wire::kHeaderSize)
    return Status::InvalidArgument(
        fmt::format("control channel: a frame of {} payload bytes in a packet of {}", h.length, size));
  Frame f;
  f.type = h.type;
  f.payload.assign(buf.begin() + wire::kHeaderSize, buf.begin() + static_cast<ptrdiff_t>(size));
  return std::optional<Frame>(std::move(f));
}

}  // namespace ds
