#include "common/netif.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "common/strings.h"
#include "common/unique_fd.h"

namespace ds {

std::string AddressString(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (sa->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof(buf));
  else if (sa->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof(buf));
  return buf;
}

namespace {

template <typename Fn>
void ForEachAddress(Fn fn) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return;
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(list, freeifaddrs);
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) continue;
    fn(*i, AddressString(i->ifa_addr));
  }
}

}  // namespace

Result<Route> RouteTo(const std::string& addr) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(addr.c_str(), "9", &hints, &res);
  if (rc != 0) return Status::NotFound(fmt::format("{}: {}", addr, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  UniqueFd fd(::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Status::IOError(fmt::format("{}: socket: {}", addr, std::strerror(errno)));
  if (::connect(fd.get(), res->ai_addr, res->ai_addrlen) != 0)
    return Status::Unavailable(fmt::format("{}: {}", addr, std::strerror(errno)));
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0)
    return Status::IOError(fmt::format("{}: getsockname: {}", addr, std::strerror(errno)));
  Route r;
  r.local_addr = AddressString(reinterpret_cast<sockaddr*>(&local));
  r.ifname = InterfaceOfAddress(r.local_addr);
  // 127.0.0.x other than .1 are routed via lo, which holds 127.0.0.1/8.
  if (r.ifname.empty() && StartsWith(r.local_addr, "127.")) r.ifname = InterfaceOfAddress("127.0.0.1");
  return r;
}

std::string InterfaceOfAddress(const std::string& local_addr) {
  std::string name;
  ForEachAddress([&](const ifaddrs& i, const std::string& a) {
    if (name.empty() && a == local_addr) name = i.ifa_name;
  });
  return name;
}

std::vector<std::string> LocalAddresses(bool with_loopback) {
  std::vector<std::string> out;
  ForEachAddress([&](const ifaddrs& i, const std::string& a) {
    if (!with_loopback && (i.ifa_flags & IFF_LOOPBACK)) return;
    out.push_back(a);
  });
  return out;
}

bool IsLocalHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || StartsWith(host, "127.")) return true;
  char name[256] = "";
  if (::gethostname(name, sizeof(name) - 1) == 0 && host == name) return true;
  for (const auto& a : LocalAddresses(true))
    if (a == host) return true;
  return false;
}

namespace {

struct TcpEntry {
  long local_port = -1, remote_port = -1;
  bool listening = false;
  uint32_t uid = 0;
};

// Every entry of /proc/net/tcp and /proc/net/tcp6, until `fn` returns true.
// Lines: "sl local_address rem_address st tx_queue:rx_queue tr:tm->when
// retrnsmt uid ...", addresses as HEX_IP:HEX_PORT, st 0A = LISTEN.
template <class Fn>
void ForEachTcpEntry(Fn&& fn) {
  auto port_of = [](const std::string& addr) -> long {
    const size_t colon = addr.rfind(':');
    return colon == std::string::npos ? -1 : static_cast<long>(std::stoul(addr.substr(colon + 1), nullptr, 16));
  };
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, queues, timer, retr;
      TcpEntry e;
      if (!(f >> sl >> local >> remote >> st >> queues >> timer >> retr >> e.uid)) continue;
      e.local_port = port_of(local);
      e.remote_port = port_of(remote);
      e.listening = st == "0A";
      if (fn(e)) return;
    }
  }
}

}  // namespace

std::vector<uint32_t> ListenerOwners(int port) {
  std::vector<uint32_t> owners;
  ForEachTcpEntry([&](const TcpEntry& e) {
    if (e.listening && e.local_port == port) owners.push_back(e.uid);
    return false;
  });
  return owners;
}

std::optional<uint32_t> AcceptedOwner(int from_port, int to_port) {
  std::optional<uint32_t> owner;
  ForEachTcpEntry([&](const TcpEntry& e) {
    if (e.local_port == to_port && e.remote_port == from_port) owner = e.uid;
    return owner.has_value();
  });
  return owner;
}

}  // namespace ds
