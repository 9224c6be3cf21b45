#include "wire/port_hold.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace ds {
namespace {

Result<UniqueFd> BoundSocket(const std::string& addr, int port, int type) {
  addrinfo hints{};
  hints.ai_socktype = type;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* res = nullptr;
  if (::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &res) != 0)
    return Status::InvalidArgument(fmt::format("'{}': expected a numeric address", addr));
  UniqueFd fd(::socket(res->ai_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  int one = 1;
  if (fd.get() >= 0) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = fd.get() < 0 ? -1 : ::bind(fd.get(), res->ai_addr, res->ai_addrlen);
  int err = errno;
  freeaddrinfo(res);
  if (rc != 0) return Status::IOError(fmt::format("bind {}:{}: {}", addr, port, std::strerror(err)));
  return fd;
}

int LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

}  // namespace

Result<std::pair<UniqueFd, int>> HoldPort(const std::string& addr, int port) {
  DS_ASSIGN_OR_RETURN(UniqueFd fd, BoundSocket(addr, port, SOCK_STREAM));
  if (::listen(fd.get(), 1) != 0)
    return Status::IOError(fmt::format("listen {}:{}: {}", addr, port, std::strerror(errno)));
  int p = LocalPort(fd.get());
  return std::make_pair(std::move(fd), p);
}

Result<std::pair<UniqueFd, std::string>> BindUdp(const std::string& addr) {
  DS_ASSIGN_OR_RETURN(UniqueFd fd, BoundSocket(addr, 0, SOCK_DGRAM));
  int p = LocalPort(fd.get());
  std::string host = addr.find(':') != std::string::npos ? "[" + addr + "]" : addr;
  return std::make_pair(std::move(fd), fmt::format("{}:{}", host, p));
}

}  // namespace ds
