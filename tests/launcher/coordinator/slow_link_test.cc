// SlowLinkDetector on made-up round trips: a node whose median round trip
// stays far above the others' is named once, after a majority of its last
// samples; one slow sample is not; the floor keeps a sub-millisecond network's
// ratios quiet; recovery is said once below the halfway mark; two nodes are
// never judged; a forgotten node starts afresh; judging 4,096 nodes is one sort.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "launcher/coordinator/slow_link.h"

namespace ds {
namespace {

const std::vector<std::string> kNames = {"w0", "w1", "w2", "w3"};

// One round of Pings answered: node n after rtt[n] seconds.
void Round(SlowLinkDetector& d, const std::vector<double>& rtt) {
  for (uint32_t n = 0; n < rtt.size(); ++n) d.OnRoundTrip(n, rtt[n]);
}

TEST_CASE("slow link: a node whose round trip stays high is named once", "[slow_link]") {
  SlowLinkDetector d({4.0, 0.02});
  for (int i = 0; i < 5; ++i) Round(d, {0.001, 0.0012, 0.0009, 0.001});
  CHECK(d.Judge(kNames).empty());
  Round(d, {0.001, 0.0011, 0.001, 0.060});
  CHECK(d.Judge(kNames).empty());  // one slow sample of five
  Round(d, {0.001, 0.0011, 0.001, 0.055});
  CHECK(d.Judge(kNames).empty());  // two
  Round(d, {0.001, 0.0011, 0.001, 0.050});
  CHECK(d.Judge(kNames) ==
        std::vector<std::string>{"slow link: w3 heartbeat round trip 50 ms, 50x the other nodes' (1.0 ms)"});
  Round(d, {0.001, 0.0011, 0.001, 0.070});
  CHECK(d.Judge(kNames).empty());  // said once
  CHECK(d.Slow() == std::vector<uint32_t>{3});
}

TEST_CASE("slow link: scattered spikes, a slow network and the floor are not reported", "[slow_link]") {
  SlowLinkDetector d({4.0, 0.02});
  for (int i = 0; i < 20; ++i) {  // every node's agent descheduled now and then: never a majority
    Round(d, {i % 5 == 0 ? 0.2 : 0.001, i % 5 == 1 ? 0.2 : 0.001, 0.001, i % 5 == 3 ? 0.3 : 0.001});
    CHECK(d.Judge(kNames).empty());
  }
  for (int i = 0; i < 5; ++i) Round(d, {0.0002, 0.0002, 0.0002, 0.015});  // 75x, but only 15 ms: under the floor
  CHECK(d.Judge(kNames).empty());
  for (int i = 0; i < 5; ++i) Round(d, {0.030, 0.035, 0.032, 0.090});  // a slow network, 2.8x: under the factor
  CHECK(d.Judge(kNames).empty());
  CHECK(d.Slow().empty());
}

TEST_CASE("slow link: recovery is said once below the halfway mark", "[slow_link]") {
  SlowLinkDetector d({4.0, 0.02});
  for (int i = 0; i < 5; ++i) Round(d, {0.001, 0.001, 0.001, 0.080});
  REQUIRE(d.Judge(kNames).size() == 1);
  for (int i = 0; i < 3; ++i) Round(d, {0.001, 0.001, 0.001, 0.012});  // 12x but 11 ms above: still above floor / 2
  CHECK(d.Judge(kNames).empty());
  for (int i = 0; i < 3; ++i) Round(d, {0.001, 0.001, 0.001, 0.002});
  CHECK(d.Judge(kNames) ==
        std::vector<std::string>{"recovered: w3 link, heartbeat round trip 2.0 ms (the other nodes' 1.0 ms)"});
  CHECK(d.Judge(kNames).empty());
  CHECK(d.Slow().empty());
}

TEST_CASE("slow link: two nodes are not judged, off is off, a forgotten node starts afresh", "[slow_link]") {
  SlowLinkDetector two({4.0, 0.02});
  for (int i = 0; i < 5; ++i) Round(two, {0.001, 0.5});
  CHECK(two.Judge(kNames).empty());  // either end's link could be the slow one

  SlowLinkDetector off({0, 0.02});
  for (int i = 0; i < 5; ++i) Round(off, {0.001, 0.001, 0.5});
  CHECK(off.Judge(kNames).empty());

  SlowLinkDetector d({4.0, 0.02});
  for (int i = 0; i < 5; ++i) Round(d, {0.001, 0.001, 0.5});
  REQUIRE(d.Judge(kNames).size() == 1);
  d.Forget(2);  // lost: no recovery line, not slow any more
  CHECK(d.Slow().empty());
  d.OnRoundTrip(2, 0.5);
  CHECK(d.Judge(kNames).empty());  // one sample: not judged yet
}

TEST_CASE("slow link: among 4,096 nodes the one slow link is named", "[slow_link]") {
  SlowLinkDetector d({4.0, 0.02});
  for (int i = 0; i < 5; ++i)
    for (uint32_t n = 0; n < 4096; ++n) d.OnRoundTrip(n, n == 1234 ? 0.1 : 0.001 + 1e-7 * n);
  const std::vector<std::string> lines = d.Judge({});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("slow link: node 1234 heartbeat round trip 100 ms", 0) == 0);
}

}  // namespace
}  // namespace ds
