// SlowLinkDetector: names the node whose network link is slow. A slowed or
// lossy link does not show in any rank's compute time (every data-parallel
// rank waits for it alike at each collective, straggler.h), but it shows in
// that node's heartbeat round trip (liveness.h): the coordinator's Pings queue
// behind the job's traffic on the congested link, or wait for a retransmit.
// Per node it keeps the last kSamples round trips and judges their median
// (one scheduling hiccup of an agent moves nothing) against the median of
// the other nodes' medians m: above max(factor x m, m + floor) is slow,
// said once, in one line:
//   slow link: w3 heartbeat round trip 48 ms, 32x the other nodes' (1.5 ms)
// and recovered, in one line, once the median falls below the halfway mark
// (max((1 + factor) / 2 x m, m + floor / 2)). Judged only with three or more
// nodes measured: with two, either end's link could be the slow one. Pure
// logic on given times; not thread-safe (the coordinator's io thread).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "common/defaults.h"

namespace ds {

struct SlowLinkOptions {
  double factor = kDefaultSlowLinkFactor;  // slow: above factor x the others' median; 0 = off
  double floor = kDefaultSlowLinkFloor;    // seconds: and at least this much above it
};

class SlowLinkDetector {
 public:
  static constexpr size_t kSamples = 5;  // round trips judged per node (the newest)

  explicit SlowLinkDetector(SlowLinkOptions options) : opt_(options) {}

  // `node` answered a Ping after `seconds`.
  void OnRoundTrip(uint32_t node, double seconds);
  // The lines to print (new reports, recoveries), naming node n as names[n].
  std::vector<std::string> Judge(const std::vector<std::string>& names);
  // `node` left (lost, evicted, a new generation without it): forgotten, no line.
  void Forget(uint32_t node) { nodes_.erase(node); }
  // The nodes reported slow and not recovered, in node order.
  std::vector<uint32_t> Slow() const;

 private:
  struct Node {
    std::deque<double> samples;  // newest last, at most kSamples
    bool reported = false;
  };
  std::string Act(uint32_t node, Node& n, double median, double others, const std::vector<std::string>& names);

  SlowLinkOptions opt_;
  std::map<uint32_t, Node> nodes_;
};

}  // namespace ds
