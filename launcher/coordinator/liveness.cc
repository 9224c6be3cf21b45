#include "launcher/coordinator/liveness.h"

#include <algorithm>
#include <chrono>

namespace ds {

Liveness::Liveness(size_t nodes, Clock::duration interval, Clock::duration timeout)
    : interval_(interval), timeout_(timeout),
      recheck_(std::clamp<Clock::duration>(interval, std::chrono::milliseconds(1), std::chrono::milliseconds(100))),
      last_seen_(nodes), watched_(nodes, false), rtt_(nodes, -1.0) {}

void Liveness::Start(Clock::time_point now) { next_ping_ = now + interval_; }

void Liveness::Watch(int node, Clock::time_point now) {
  watched_[node] = true;
  last_seen_[node] = now;
  rtt_[node] = -1;  // a new agent: its round trip is measured afresh
  next_judge_ = std::min(next_judge_, now + timeout_);
}

void Liveness::Unwatch(int node) { watched_[node] = false; }

uint64_t Liveness::Stamp(Clock::time_point now) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  return us > 0 ? static_cast<uint64_t>(us) : 1;
}

void Liveness::Echoed(int node, uint64_t echo_micros, Clock::time_point now) {
  const uint64_t at = Stamp(now);
  if (echo_micros == 0 || echo_micros > at) return;
  rtt_[node] = static_cast<double>(at - echo_micros) / 1e6;
}

// One pass: the silent, the Pings, and the next silence deadline.
Liveness::Due Liveness::Wake(Clock::time_point now) {
  Due due;
  const Clock::time_point deadline = NextDeadline();
  if (now < deadline) return due;
  const bool on_time = now - deadline <= interval_;
  const bool ping = now >= next_ping_;
  if (ping) next_ping_ = now + interval_;
  if (!on_time) due.late_s = std::chrono::duration<double>(now - deadline).count();
  next_judge_ = on_time ? Clock::time_point::max() : now + recheck_;
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (!watched_[i]) continue;
    const Clock::time_point silent_at = last_seen_[i] + timeout_;
    if (on_time && now >= silent_at) {
      due.silent.push_back(static_cast<int>(i));
      continue;
    }
    if (on_time) next_judge_ = std::min(next_judge_, silent_at);
    if (ping) due.ping.push_back(static_cast<int>(i));
  }
  return due;
}

}  // namespace ds
