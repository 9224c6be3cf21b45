// StoreRelay: the node of rank 0 keeps MASTER_PORT listening for the whole
// generation and connects each client through to rank 0's own store, which
// listens on a second port (docs/coming-from.md, difference 6). Without it the port is free
// until rank 0 reaches init_process_group, and torch's store client, refused,
// retries once a second: every other rank lost up to 1 s in every generation.
// With it a client is accepted at once; its bytes wait in the relay until
// upstream_port listens on one of upstream_hosts (tried every retry_step, one
// try at a time for all waiting clients, each host in turn), then flow both
// ways unchanged, so any torch
// version's protocol passes. A client still waiting after wait_limit is
// closed, said in the log.
//
// The relay runs on a thread of its own, started by Start() and stopped and
// joined by the destructor; nothing it does blocks the agent's loop, and no
// exception leaves the thread (one that escapes its loop ends the relay,
// logged). Every socket is non-blocking and close-on-exec; destroying the
// relay closes all of them, the listener included (the port is free again).
// The public methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace ds {

// torch's default timeout of init_process_group (and so of its env:// store).
inline constexpr std::chrono::seconds kDefaultStoreRelayWait{1800};

struct StoreRelayOptions {
  int upstream_port = 0;                               // rank 0's store's port
  // Where rank 0 may listen on it (numeric IPv4), tried in turn while
  // refused: the loopback (a store bound to any address) and MASTER_ADDR (a
  // rank 0 that binds (MASTER_ADDR, MASTER_PORT) itself).
  std::vector<std::string> upstream_hosts = {"127.0.0.1"};
  std::chrono::milliseconds retry_step{5};             // between tries while it does not listen
  std::chrono::milliseconds wait_limit{kDefaultStoreRelayWait};  // a client waits this long at most
  size_t buffer_bytes = 256 * 1024;                    // per connection and direction
  // What clients not yet connected through (anyone who reaches MASTER_PORT:
  // it has no authentication) may cost, in all: past held_budget bytes the
  // relay stops reading them, past max_waiting of them it stops accepting
  // (the rest wait in the backlog) until some are connected or gone.
  size_t held_budget = 4u << 20;
  size_t max_waiting = 1024;                           // the agent: a few times the world size
};

class StoreRelay {
 public:
  struct Counts {
    uint64_t accepted = 0;   // clients accepted on the listener
    uint64_t connected = 0;  // of them, connected through to the upstream
    uint64_t refused = 0;    // tries the upstream refused (it was not listening yet)
    uint64_t expired = 0;    // clients closed after waiting wait_limit
    uint64_t open = 0;       // clients now open
    uint64_t waiting = 0;    // of them, not yet connected through
    uint64_t held = 0;       // bytes held for those (at most held_budget)
  };

  // Relays what `listener` (a listening TCP socket, now the relay's)
  // accepts. Error when the thread's wake-up descriptor cannot be made.
  static Result<std::unique_ptr<StoreRelay>> Start(UniqueFd listener, const StoreRelayOptions& options);
  ~StoreRelay();  // stops the thread and joins it; every socket closed

  Counts counts() const;

  StoreRelay(const StoreRelay&) = delete;
  StoreRelay& operator=(const StoreRelay&) = delete;

 private:
  class Loop;
  StoreRelay() = default;

  UniqueFd wake_;  // eventfd: written once to stop the thread
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace ds
