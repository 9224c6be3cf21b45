#include "tests/test_util/hostile_peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace ds::testing {
namespace {

// `host` and `port` as a socket address; false when `host` is not numeric.
bool ToAddress(const std::string& host, int port, sockaddr_storage* sa, socklen_t* len) {
  std::memset(sa, 0, sizeof(*sa));
  auto* v4 = reinterpret_cast<sockaddr_in*>(sa);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(sa);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(*v4);
    return true;
  }
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(*v6);
    return true;
  }
  return false;
}

}  // namespace

IdlePeers::IdlePeers(const std::string& addr, int n, const std::string& source) {
  const bool bracket = !addr.empty() && addr[0] == '[';
  const size_t colon = addr.rfind(':');
  const std::string host = addr.substr(bracket ? 1 : 0, colon - (bracket ? 2 : 0));
  const int port = std::atoi(addr.c_str() + colon + 1);
  sockaddr_storage to, from;
  socklen_t to_len = 0, from_len = 0;
  if (!ToAddress(host, port, &to, &to_len)) return;
  if (!source.empty() && !ToAddress(source, 0, &from, &from_len)) return;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) break;
    if ((!source.empty() && ::bind(fd, reinterpret_cast<sockaddr*>(&from), from_len) != 0) ||
        (::connect(fd, reinterpret_cast<sockaddr*>(&to), to_len) != 0 && errno != EINPROGRESS)) {
      ::close(fd);
      continue;
    }
    fds_.push_back(fd);
  }
}

IdlePeers::~IdlePeers() {
  for (int fd : fds_) ::close(fd);
}

size_t IdlePeers::WaitClosedByPeer(double seconds) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<pollfd> open;
  for (int fd : fds_) open.push_back({fd, POLLIN, 0});
  while (!open.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0 || ::poll(open.data(), open.size(), static_cast<int>(left.count())) <= 0) break;
    for (size_t i = open.size(); i-- > 0;) {
      char c;
      if (open[i].revents && ((open[i].revents & (POLLHUP | POLLERR)) ||
                              ::recv(open[i].fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0))
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return fds_.size() - open.size();
}

}  // namespace ds::testing
