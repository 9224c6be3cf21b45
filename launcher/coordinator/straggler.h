// StragglerDetector: names the node that is alive but slow. From the
// per-rank view (rank_progress.h) it compares each rank's compute time per
// step (time between collectives; the step time when some rank does not say,
// since in data-parallel training every rank's step waits for the slowest)
// with the median of the other nodes' ranks. A node with a rank above
// factor x that median for `window` seconds is reported once, in one line:
//   slow: w3 (ranks 6-7) 2.4x the median compute time for the last 2 s
// and, once all its ranks stay below the halfway mark ((1 + factor) / 2) for
// `window` again, recovered in one line. Nothing is said with fewer than two
// nodes reporting. Pure logic on given times; JobControl calls Judge() when
// summaries arrive, at most once per heartbeat interval. Not thread-safe.
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
  double window = kDefaultSlowWindow;  // seconds it must last before it is said (both ways)
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
    TimePoint above_since{};  // first judged above factor; {} = not above
    TimePoint below_since{};  // reported, first judged below the halfway mark; {} = not below
  };
  struct NodeJudgement {
    uint32_t node = 0;
    double ratio = 0;              // its slowest rank / the peers' median
    std::vector<int32_t> slow;     // its ranks above factor x the median
  };
  std::vector<NodeJudgement> Measure(const RankProgressView& view, bool* by_compute) const;
  std::string Act(const NodeJudgement& j, bool by_compute, const std::vector<std::string>& names, TimePoint now);

  StragglerOptions opt_;
  std::map<uint32_t, NodeState> nodes_;
};

// "6", "6-7", "2, 6-7": sorted ranks as ranges.
std::string RankRanges(const std::vector<int32_t>& ranks);

}  // namespace ds
