// Sockets the agent holds for its node: MASTER_PORT bind-and-hold (node rank
// 0 binds the port and keeps it until just before its workers start, so no
// one else takes it between the choice and the use), and the UDP endpoint of
// the step heartbeats. Thread-safe functions; the caller owns the fds.
#pragma once

#include <string>
#include <utility>

#include "wire/client_conn.h"

namespace ds {

// Binds and listens on addr:port (port 0 = a free one). Returns the socket
// and the port. Error: "bind 127.0.0.1:29500: Address already in use".
Result<std::pair<UniqueFd, int>> HoldPort(const std::string& addr, int port);

// A non-blocking UDP socket bound to addr:0 and its "addr:port".
Result<std::pair<UniqueFd, std::string>> BindUdp(const std::string& addr);

}  // namespace ds
