#include "launcher/join/rendezvous_claim.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace ds {
namespace {

constexpr int kBacklog = 65535;  // as the coordinator's own listen (the kernel caps it)

// A socket bound to `addr`:`port` (numeric) and listening, or errno.
Result<UniqueFd> BindListen(const std::string& addr, int port, int* err) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&ss); ::inet_pton(AF_INET, addr.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss); ::inet_pton(AF_INET6, addr.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
  } else {
    return Status::InvalidArgument(fmt::format("rendezvous address '{}' is not numeric", addr));
  }
  UniqueFd fd(::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  if (fd.get() < 0 || ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      ::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd.get(), kBacklog) != 0) {
    *err = errno;
    return UniqueFd();
  }
  *err = 0;
  return fd;
}

}  // namespace

Result<UniqueFd> ClaimRendezvous(const PerNodeLaunch& p) {
  if (p.conf.is_host == false) return UniqueFd();
  DS_ASSIGN_OR_RETURN(std::string addr, PerNodeListenAddress(p));
  int err = 0;
  DS_ASSIGN_OR_RETURN(UniqueFd fd, BindListen(addr, p.port, &err));
  if (err == 0) return fd;
  const std::string endpoint = fmt::format("{}:{}", p.addr, p.port);
  if (p.conf.is_host == true)
    return Status::Unavailable(fmt::format("--rdzv-conf is_host=true: cannot bind the rendezvous {} ({}): {}",
                                           endpoint, addr, std::strerror(err)));
  if (err == EADDRNOTAVAIL || err == EADDRINUSE) return UniqueFd();  // another machine's, or taken: join it
  return Status::Unavailable(fmt::format("rendezvous {} ({}): cannot bind: {}", endpoint, addr, std::strerror(err)));
}

}  // namespace ds
