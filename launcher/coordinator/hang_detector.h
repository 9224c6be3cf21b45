// HangDetector: says when the whole generation has stopped advancing. From
// the per-rank view (rank_progress.h: a rank's entry is refreshed only when
// its step moved) it takes the last time any rank advanced and the median
// of the ranks' mean step times; the job is hung when every rank of the
// generation has reported and none advanced for
//   max(factor x the median step time, floor)
// (the floor alone while no rank has a step time yet). In data-parallel
// training one rank that stops holds every other at the next collective, so
// "no rank advances" is the symptom of one stuck rank as much as of all.
// Judged once, until Reset() (a new generation). Pure logic on given times;
// JobControl calls Judge() from its timer (every heartbeat interval).
// Not thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "launcher/coordinator/rank_progress.h"

namespace ds {

struct HangOptions {
  double factor = 0;    // hung: no step for factor x the median step time; 0 = off
  double floor = 30.0;  // ... and never sooner than this many seconds
};

class HangDetector {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit HangDetector(HangOptions options) : opt_(options) {}

  // At `now`, with `world_size` ranks in the generation: nullopt while not
  // hung (or off, or said already), else the one line that says so, e.g.
  //   "hang: no rank advanced for 12.0 s (threshold 10 x the median step time 800.0 ms, at least 5 s); taking every rank's stacks"
  std::optional<std::string> Judge(const RankProgressView& view, int world_size, TimePoint now);
  // A new generation: judged afresh.
  void Reset() { said_ = false; }
  bool on() const { return opt_.factor > 0; }

 private:
  HangOptions opt_;
  bool said_ = false;
};

}  // namespace ds
