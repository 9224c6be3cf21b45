// StragglerDetector: names the node that is alive but slow. From the
// per-rank view (rank_progress.h) it compares each rank's compute time per
// step (time between collectives; the step time when some rank does not say,
// since in data-parallel training every rank's step waits for the slowest)
// with the median of the other nodes' ranks: the node's ratio is its slowest
// rank's. Evidence is summed per node (a CUSUM): each judgement adds
// (ratio - halfway) x the seconds since the last, halfway = (1 + factor) / 2,
// and the sum never goes below 0; the node is reported once it reaches
// (factor - halfway) x window, what `window` seconds at exactly `factor`
// give, in one line:
//   slow: w3 (ranks 6-7) 2.4x the median compute time for the last 2 s
// (the mean ratio and length of the stretch the evidence built up over).
// So a node steadily at `factor` is named after `window`, a slower one
// sooner, and one whose ratio wavers around the factor (a throttled CPU: a
// stall that lands while the rank is inside a collective does not show in
// its compute time) is not lost to one dip. Recovery is the mirror: the
// same sum of (halfway - ratio), recovered in one line. Nothing is said with
// fewer than two nodes reporting. Pure logic on given times; JobControl calls
// Judge() when summaries arrive, at most once per heartbeat interval. Not
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "launcher/coordinator/rank_progress.h"

namespace ds {

struct StragglerOptions {
  double factor = kDefaultSlowFactor;  // slow: above factor x the peers' median; 0 = off
  double window = kDefaultSlowWindow;  // seconds at `factor` before it is said (both ways)
  double interval = kDefaultHeartbeatInterval;  // seconds between judgements: a judgement's weight
                                                // (the first's, and at most twice it after a gap)
};

class StragglerDetector {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit StragglerDetector(StragglerOptions options) : opt_(options) {}

  // Judges `view` at `now`: the lines to print (new reports, recoveries),
  // naming node n as names[n] (its index when names is shorter).
  std::vector<std::string> Judge(const RankProgressView& view, const std::vector<std::string>& names, TimePoint now);
  // A new generation: every node's state forgotten (no recovery line).
  void Reset() { nodes_.clear(); }
  // The nodes reported slow and not recovered, in node order.
  std::vector<uint32_t> Slow() const;

 private:
  struct NodeState {
    bool reported = false;
    TimePoint last{};       // the last judgement; {} = none
    double evidence = 0;    // ratio-seconds above the halfway mark (below it, once reported)
    double seconds = 0;     // the stretch the evidence built up over ...
    double ratio_sum = 0;   // ... and the sum of ratio x seconds over it
  };
  struct NodeJudgement {
    uint32_t node = 0;
    double ratio = 0;              // its slowest rank / the peers' median
    std::vector<int32_t> slow;     // its ranks above the halfway mark x the median
  };
  std::vector<NodeJudgement> Measure(const RankProgressView& view, bool* by_compute) const;
  std::string Act(const NodeJudgement& j, bool by_compute, const std::vector<std::string>& names, TimePoint now);

  StragglerOptions opt_;
  std::map<uint32_t, NodeState> nodes_;
};

// "6", "6-7", "2, 6-7": sorted ranks as ranges.
std::string RankRanges(const std::vector<int32_t>& ranks);

}  // namespace ds
