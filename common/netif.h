// Network interface facts of this machine: which local address and interface
// route to a given address (UDP connect + getsockname + getifaddrs; no packet
// is sent), the machine's addresses, and whether a host name means "this
// machine". Thread-safe; reads kernel state on every call.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

struct Route {
  std::string local_addr;  // our address used to reach the target, e.g. "10.0.0.5"
  std::string ifname;      // the interface holding it, e.g. "eth0" or "lo"
};

// The route the kernel would use to reach `addr` (numeric or resolvable).
// Errors name the address ("10.9.9.9: Network is unreachable").
Result<Route> RouteTo(const std::string& addr);

// The numeric text of an IPv4 or IPv6 socket address ("10.0.0.5", "::1");
// "" for any other family.
std::string AddressString(const sockaddr* sa);

// The interface that holds the local address `local_addr`; "" if none.
std::string InterfaceOfAddress(const std::string& local_addr);

// Every IPv4/IPv6 address of an up interface, loopback excluded unless
// `with_loopback`.
std::vector<std::string> LocalAddresses(bool with_loopback = false);

// True for "localhost", 127.0.0.0/8, ::1, this machine's host name and any
// of its own addresses.
bool IsLocalHost(const std::string& host);

// The owners (uids) of the TCP sockets listening on `port` on any local
// address, IPv4 or IPv6 (/proc/net/tcp, tcp6); empty when none listens.
std::vector<uint32_t> ListenerOwners(int port);
// The uid owning the far end of this host's TCP connection from local port
// `from_port` to port `to_port` (the socket a server accepted it on), from
// /proc/net/tcp{,6}; nullopt when there is no such entry.
std::optional<uint32_t> AcceptedOwner(int from_port, int to_port);

}  // namespace ds
