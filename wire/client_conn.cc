#include "wire/client_conn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "common/strings.h"
#include "wire/hmac_auth.h"

namespace ds {

Result<std::pair<std::string, int>> SplitHostPort(const std::string& addr) {
  std::string host;
  std::string port;
  if (!addr.empty() && addr[0] == '[') {
    size_t close = addr.find(']');
    if (close == std::string::npos || close + 1 >= addr.size() || addr[close + 1] != ':')
      return Status::InvalidArgument(fmt::format("'{}': expected [ipv6]:port", addr));
    host = addr.substr(1, close - 1);
    port = addr.substr(close + 2);
  } else {
    size_t colon = addr.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return Status::InvalidArgument(fmt::format("'{}': expected host:port", addr));
    host = addr.substr(0, colon);
    port = addr.substr(colon + 1);
  }
  auto p = ParseInt(port);
  if (!p || *p <= 0 || *p > 65535)
    return Status::InvalidArgument(fmt::format("'{}': expected a port 1..65535, got '{}'", addr, port));
  return std::make_pair(host, static_cast<int>(*p));
}

Result<UniqueFd> ConnectTcp(const std::string& addr, const std::string& bind_addr, Deadline deadline,
                            SocketCancel* cancel) {
  DS_ASSIGN_OR_RETURN(auto hp, SplitHostPort(addr));
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(hp.first.c_str(), std::to_string(hp.second).c_str(), &hints, &res);
  if (rc != 0) return Status::Unavailable(fmt::format("{}: {}", addr, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);

  UniqueFd fd(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return Status::IOError(fmt::format("{}: socket: {}", addr, std::strerror(errno)));
  SocketCancelScope cancellable(cancel, fd.get());
  if (!bind_addr.empty()) {
    addrinfo* local = nullptr;
    hints.ai_flags = AI_NUMERICHOST;
    hints.ai_family = res->ai_family;
    if (::getaddrinfo(bind_addr.c_str(), "0", &hints, &local) != 0)
      return Status::InvalidArgument(fmt::format("bind address '{}': expected a numeric address", bind_addr));
    int b = ::bind(fd.get(), local->ai_addr, local->ai_addrlen);
    int err = errno;
    freeaddrinfo(local);
    if (b != 0) return Status::IOError(fmt::format("bind {}: {}", bind_addr, std::strerror(err)));
  }
  if (::connect(fd.get(), res->ai_addr, res->ai_addrlen) != 0 && errno != EINPROGRESS)
    return Status::Unavailable(fmt::format("{}: {}", addr, std::strerror(errno)));
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd.get(), POLLOUT, 0};
    int r = ::poll(&p, 1, left.count() > 0 ? static_cast<int>(left.count()) : 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return Status::Timeout(fmt::format("{}: connect timed out", addr));
    if (r < 0) return Status::IOError(fmt::format("{}: poll: {}", addr, std::strerror(errno)));
    break;
  }
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return Status::Unavailable(fmt::format("{}: {}", addr, std::strerror(err)));
  if (cancel && cancel->cancelled()) return Status::Unavailable(fmt::format("{}: connect cancelled", addr));
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

Status ExpectFrame(const Result<Frame>& f, wire::MsgType want, const char* stage) {
  if (!f.ok()) return f.status().Prefixed(stage);
  if (f->type == wire::MsgType::kError) {
    // The peer's words, escaped: they may not be authenticated yet.
    auto e = msg::Error::Decode(f->payload);
    std::string m = e.ok() ? Printable(e->message) : "malformed error frame";
    if (e.ok() && e->code == static_cast<uint32_t>(wire::ErrorCode::kAuth)) return Status::PermissionDenied(m);
    if (e.ok() && e->code == static_cast<uint32_t>(wire::ErrorCode::kInvalid)) return Status::InvalidArgument(m);
    return Status::Unavailable(m);
  }
  if (f->type != want)
    return Status::IOError(fmt::format("{}: unexpected message type {}", stage, static_cast<int>(f->type)));
  return Status::OK();
}

Status ClientHandshake(int fd, const msg::Hello& hello, const std::string& key, Deadline deadline) {
  DS_RETURN_IF_ERROR(WriteFrame(fd, wire::MsgType::kHello, hello.Encode(), deadline));
  auto f = ReadFrame(fd, deadline, wire::kMaxHandshakeReply);
  DS_RETURN_IF_ERROR(ExpectFrame(f, wire::MsgType::kChallenge, "handshake"));
  DS_ASSIGN_OR_RETURN(msg::Challenge ch, msg::Challenge::Decode(f->payload));
  if (ch.nonce.size() != wire::kNonceSize) return Status::IOError("handshake: bad challenge size");
  DS_RETURN_IF_ERROR(WriteFrame(fd, wire::MsgType::kAuth, msg::Auth{ClientProof(key, ch.nonce)}.Encode(), deadline));
  auto ok = ReadFrame(fd, deadline, wire::kMaxHandshakeReply);
  DS_RETURN_IF_ERROR(ExpectFrame(ok, wire::MsgType::kAuthOk, "authentication"));
  DS_ASSIGN_OR_RETURN(msg::AuthOk a, msg::AuthOk::Decode(ok->payload));
  if (!MacEquals(a.mac, ServerProof(key, ch.nonce)))
    return Status::Aborted("the server failed to prove it knows the key: it is not this job's");
  return Status::OK();
}

Result<msg::Hello> ServerHandshake(int fd, wire::Role role, const std::string& job_id, const std::string& key,
                                   Deadline deadline) {
  auto refuse = [&](wire::ErrorCode code, const std::string& why) {
    (void)WriteFrame(fd, wire::MsgType::kError, msg::Error{static_cast<uint32_t>(code), why}.Encode(), deadline);
    return code == wire::ErrorCode::kAuth ? Status::PermissionDenied(why) : Status::IOError(why);
  };
  auto f = ReadFrame(fd, deadline, wire::kMaxHandshakePayload);
  DS_RETURN_IF_ERROR(ExpectFrame(f, wire::MsgType::kHello, "handshake"));
  DS_ASSIGN_OR_RETURN(msg::Hello hello, msg::Hello::Decode(f->payload));
  if (hello.role != role) return refuse(wire::ErrorCode::kProtocol, "handshake: unexpected role");
  if (hello.job_id != job_id) return refuse(wire::ErrorCode::kAuth, "handshake: another job");
  const Bytes nonce = RandomBytes(wire::kNonceSize);
  DS_RETURN_IF_ERROR(WriteFrame(fd, wire::MsgType::kChallenge, msg::Challenge{nonce}.Encode(), deadline));
  auto a = ReadFrame(fd, deadline, wire::kMaxHandshakePayload);
  DS_RETURN_IF_ERROR(ExpectFrame(a, wire::MsgType::kAuth, "handshake"));
  DS_ASSIGN_OR_RETURN(msg::Auth auth, msg::Auth::Decode(a->payload));
  if (!MacEquals(auth.mac, ClientProof(key, nonce))) return refuse(wire::ErrorCode::kAuth, "authentication failed");
  DS_RETURN_IF_ERROR(WriteFrame(fd, wire::MsgType::kAuthOk, msg::AuthOk{ServerProof(key, nonce)}.Encode(), deadline));
  return hello;
}

}  // namespace ds
