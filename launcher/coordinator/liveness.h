// Liveness: JobControl's heartbeat part, apart from sockets and timers:
// which registered agents are still heard from, and when the coordinator
// pings them. Every frame from an agent is Heard() (O(1): it moves that
// agent's last time and no deadline). JobControl's one timer wakes at
// NextDeadline(), the earlier of
//   - the next Ping, once per heartbeat_interval (the heartbeat itself), and
//   - the earliest silence deadline: the oldest last time + heartbeat_timeout
//     as of the last wake (frames since can only move it later, so a wake at
//     it may find nobody silent and simply re-arm at the real one).
// Nothing else wakes it: with agents beating every interval that is about one
// wake per interval plus one per (timeout - interval), each one pass over
// the agents. Wake() names the agents silent for heartbeat_timeout and, when
// a Ping is due, the ones to ping. A wake more than heartbeat_interval late
// means this thread did not run (an overloaded or paused machine): the
// agents' frames may wait unread, so it judges nobody and looks again
// kRecheck later (100 ms, or the interval when shorter), once they are read.
// It also keeps each agent's heartbeat round trip: the Pings it has sent
// carry Stamp(now), an agent echoes the stamp at once (wire_format.md "Agent
// session"), and Echoed() takes the clock now minus the echo.
// Not thread-safe: the coordinator's io thread; time is passed in.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/clock.h"

namespace ds {

class Liveness {
 public:
  // `nodes` candidates (agents by node index), none watched yet.
  Liveness(size_t nodes, Clock::duration interval, Clock::duration timeout);

  // The first Ping is due one interval after `now`.
  void Start(Clock::time_point now);
  // `node` registered (or rejoined): its silence counts from `now`.
  void Watch(int node, Clock::time_point now);
  // A silent node not judged now: the silent are due again at the next recheck after `now`.
  void Recheck(Clock::time_point now) { next_judge_ = std::min(next_judge_, now + recheck_); }
  // `node` was lost: neither judged nor pinged any more.
  void Unwatch(int node);
  // A frame from `node` arrived.
  void Heard(int node, Clock::time_point now) { last_seen_[node] = now; }
  // What a Ping sent at `now` carries (msg::Ping::sent_micros): the clock in
  // microseconds since its epoch, never 0 (0 asks for no answer).
  static uint64_t Stamp(Clock::time_point now);
  // `node` echoed a stamp (msg::Ping::echo_micros): its round trip is now
  // minus the stamp. An echo of 0, or from the future (not a stamp of
  // ours), is ignored.
  void Echoed(int node, uint64_t echo_micros, Clock::time_point now);
  // `node`'s last round trip in seconds; < 0 when none was measured since
  // it was watched.
  double RoundTrip(int node) const { return rtt_[node]; }
  // When `node` was last heard (or watched); the clock's epoch when never.
  Clock::time_point LastSeen(int node) const { return last_seen_[node]; }
  // When Wake() next has something to do.
  Clock::time_point NextDeadline() const { return std::min(next_ping_, next_judge_); }

  struct Due {
    std::vector<int> silent;  // watched and silent for heartbeat_timeout: lost (the caller unwatches them)
    std::vector<int> ping;    // watched and not silent: send each its Ping now
    double late_s = 0;        // > 0: the wake came this late (the thread did not run); nobody was judged
  };
  // What is due at `now` (nothing before NextDeadline()).
  Due Wake(Clock::time_point now);

 private:
  Clock::duration interval_;
  Clock::duration timeout_;
  Clock::duration recheck_;  // after a late wake, or a silence not judged yet (Recheck)
  std::vector<Clock::time_point> last_seen_;  // by node
  std::vector<bool> watched_;                  // by node
  std::vector<double> rtt_;                    // by node, seconds; < 0: none yet
  Clock::time_point next_ping_ = Clock::time_point::max();
  Clock::time_point next_judge_ = Clock::time_point::max();  // a lower bound of the earliest silence deadline
};

}  // namespace ds
