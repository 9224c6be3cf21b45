// RankSummaries: what the agent keeps of its workers' step beats so that the
// coordinator learns each rank's progress without a message per step: per
// rank the last step and, over a sliding window of recent steps, the mean
// step time (the time between the window's beats, on the agent's clock, over
// the steps advanced), the mean compute time per step and samples per second
// (when the worker sends the long beat, wire/step_heartbeat.h), and the
// stall of its last snapshot save (when it said one), and the newest loss
// and evaluation accuracy it said (the metric-form beat). Means, not
// medians: a throttled CPU (cgroup cpu.max, a SIGSTOP duty cycle) stalls one
// step in many for the whole throttle period, which a median never sees,
// while one pause in a window of many steps moves the mean little.
// AgentControl sends what changed with each Ping (msg::Progress). Pure logic
// on given times; not thread-safe (the agent's one thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "wire/protocol.h"

namespace ds {

class RankSummaries {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  // Steps older than `window` drop out of the medians (the newest one stays).
  static constexpr Duration kDefaultWindow = std::chrono::seconds(2);
  static constexpr size_t kMaxSteps = 1024;  // beats kept per rank, whatever the window

  explicit RankSummaries(Duration window = kDefaultWindow) : window_(window) {}

  // A new generation: every rank forgotten.
  void Clear() { ranks_.clear(); }
  // A beat of `rank` (already authenticated) at `now`: its step, the step's
  // compute microseconds and samples, its last save's stall (-1: unknown,
  // none). A step not above the last one changes nothing (a resent or
  // reordered datagram).
  void OnBeat(int rank, int64_t step, int64_t compute_micros, int64_t samples, int64_t save_stall_micros,
              TimePoint now);
  // The loss and/or accuracy a beat of `rank` at `step` said (NaN: not
  // said): kept as the rank's newest, with that step, whatever the window;
  // also from a second beat of a step already counted (dstrain's after an
  // evaluation). A step below the newest one said is ignored.
  void OnMetrics(int rank, int64_t step, double loss, double accuracy);
  // The ranks that beat since the last call, summarised over the window
  // ending at `now`, in rank order; empty when none did.
  std::vector<msg::RankStat> TakeChanged(TimePoint now);

 private:
  struct Interval {
    TimePoint at;              // when the beat arrived
    double seconds;            // since the previous beat
    int64_t steps;             // advanced since the previous beat
    double compute_seconds;    // of the beat's step; <0 unknown
    double samples;            // of the beat's step; <0 unknown
  };
  struct Rank {
    int64_t step = -1;
    TimePoint last;
    bool changed = false;
    int64_t save_stall_micros = -1;  // the newest said; kept across windows
    int64_t loss_step = -1;          // the newest loss said and its step; kept across windows
    double loss = 0;
    int64_t accuracy_step = -1;      // the newest accuracy said and its step
    double accuracy = 0;
    std::deque<Interval> recent;  // oldest first
  };
  msg::RankStat Summarise(int rank, Rank& r, TimePoint now) const;

  Duration window_;
  std::map<int, Rank> ranks_;
};

}  // namespace ds
