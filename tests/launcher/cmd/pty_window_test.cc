// FitPtyWindow: the workers' terminal is the launcher's less the widest
// "host:rank " prefix, never narrower than 20 columns; 80 x 24 off a
// terminal; the launcher's TERM unless it is unset, empty or "dumb".
#include "launcher/cmd/pty_window.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

LaunchPlan PlanOf(std::vector<std::string> hosts, std::vector<std::string> standbys, int world) {
  LaunchPlan p;
  for (auto& h : hosts) p.nodes.push_back(NodePlan{.host = HostEntry{.name = h}});
  for (auto& h : standbys) p.standbys.push_back(NodePlan{.host = HostEntry{.name = h}});
  p.world_size = world;
  return p;
}

TEST_CASE("pty window: the launcher's terminal less the widest prefix", "[unit]") {
  // "worker-10:15 " is 13 columns: the longest host (a standby's) and the highest rank.
  const LaunchPlan plan = PlanOf({"w1", "w2"}, {"worker-10"}, 16);
  PtyWindow w = FitPtyWindow(plan, TerminalSize{120, 50}, std::string("screen-256color"));
  CHECK(w.columns == 107);
  CHECK(w.rows == 50);
  CHECK(w.term == "screen-256color");
  CHECK(FitPtyWindow(plan, TerminalSize{25, 10}, std::nullopt).columns == 20);
}

TEST_CASE("pty window: 80 x 24 and a usable TERM off a terminal", "[unit]") {
  const LaunchPlan plan = PlanOf({"w1"}, {}, 2);
  for (const auto& term : {std::optional<std::string>(), std::optional<std::string>(""),
                           std::optional<std::string>("dumb")}) {
    PtyWindow w = FitPtyWindow(plan, std::nullopt, term);
    CHECK(w.columns == 80);
    CHECK(w.rows == 24);
    CHECK(w.term == "xterm-256color");
  }
}

}  // namespace
}  // namespace ds
