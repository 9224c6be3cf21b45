// The unauthenticated peer, for tests of what anyone on the network can do
// to a listener of ours without a key: connections that connect and then say
// nothing (a slowloris, a port scanner, a peer that holds slots). They are
// opened without waiting for the connect to complete, so a listener that has
// stopped accepting does not stall the test. Not thread-safe; one owner.
#pragma once

#include <string>
#include <vector>

namespace ds::testing {

class IdlePeers {
 public:
  // Opens `n` TCP connections to `addr` ("host:port", numeric; "[v6]:port")
  // from the local address `source` ("" = the kernel's choice). Those the
  // kernel refuses at once are not kept; opened() says how many are.
  IdlePeers(const std::string& addr, int n, const std::string& source = "");
  ~IdlePeers();  // closes them all
  IdlePeers(const IdlePeers&) = delete;
  IdlePeers& operator=(const IdlePeers&) = delete;

  size_t opened() const { return fds_.size(); }
  // Waits until the other side has closed (EOF or reset) every one, at most
  // `seconds`; returns how many it closed.
  size_t WaitClosedByPeer(double seconds) const;

 private:
  std::vector<int> fds_;
};

}  // namespace ds::testing
