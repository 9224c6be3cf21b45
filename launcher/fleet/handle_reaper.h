// HandleReaper: ends agent handles off the coordinator's thread.
// AgentHandle::Terminate() may block on the agent's peer: an SSH handle sends
// TERM, waits up to its stop grace for the channel to end and then tears the
// session down, which for a node lost to a partition means seconds on a dark
// connection. The coordinator's io thread never waits on a peer (its
// heartbeats and the workers' output would stop meanwhile), so AgentFleet
// hands every handle it is done with to Reap(), which returns at once; a
// thread of the reaper's own (started at the first Reap) terminates and
// destroys them in the order they came.
// Thread-safe: Reap() from any thread. The destructor waits until every
// handle handed over has ended, then joins the thread (no detached threads).
// An exception from a handle is caught and logged on the reaper's thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "launcher/spawn/spawner.h"

namespace ds {

class HandleReaper {
 public:
  HandleReaper() = default;
  ~HandleReaper();
  HandleReaper(const HandleReaper&) = delete;
  HandleReaper& operator=(const HandleReaper&) = delete;

  // Queues `handle` to be terminated and destroyed; never blocks on it. Null is ignored.
  void Reap(std::unique_ptr<AgentHandle> handle);

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable wake_;   // a handle queued, or closing_
  std::deque<std::unique_ptr<AgentHandle>> queue_;  // guarded by mu_
  bool closing_ = false;            // guarded by mu_
  std::thread thread_;              // started by the first Reap()
};

}  // namespace ds
