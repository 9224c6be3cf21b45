// LaunchTree: the shape of the tree, hand-offs on registration, and every
// way a child goes back to the launcher (its parent could not start it, the
// deadline passed), each exactly once; stale reports change nothing.
#include "launcher/fleet/launch_tree.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using std::chrono::seconds;
using V = std::vector<int>;

TEST_CASE("launch tree: breadth-first, K children per node, the launcher starts the first K", "[tree]") {
  LaunchTree t(7, 2, seconds(30));
  CHECK(t.Roots() == V{0, 1});
  CHECK(t.Children(0) == V{2, 3});
  CHECK(t.Children(1) == V{4, 5});
  CHECK(t.Children(2) == V{6});
  CHECK(t.Children(3).empty());
  CHECK(t.Subtree(0) == V{0, 2, 3, 6});
  CHECK(t.Subtree(5) == V{5});
  CHECK(t.Depth() == 3);
  CHECK(LaunchTree(1, 8, seconds(1)).Depth() == 1);
  CHECK(LaunchTree(8, 8, seconds(1)).Depth() == 1);
  CHECK(LaunchTree(9, 8, seconds(1)).Depth() == 2);
  CHECK(LaunchTree(4096, 8, seconds(1)).Depth() == 4);    // 8 + 64 + 512 + 3512
  CHECK(LaunchTree(4096, 64, seconds(1)).Depth() == 2);   // 64 + 4032
  CHECK(LaunchTree(16384, 32, seconds(1)).Depth() == 3);  // 32 + 1024 + 15328
}

TEST_CASE("launch tree: every node but the roots is handed to its parent exactly once", "[tree]") {
  const int n = 100;
  LaunchTree t(n, 3, seconds(30));
  FakeClock clock;
  std::vector<int> handed(n, 0);
  std::vector<int> queue = t.Roots();
  for (size_t i = 0; i < queue.size(); ++i)
    for (int c : t.OnRegistered(queue[i], clock.Now())) {
      ++handed[c];
      queue.push_back(c);
    }
  CHECK(queue.size() == static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) CHECK(handed[i] == (i < 3 ? 0 : 1));
  CHECK(t.OnRegistered(0, clock.Now()).empty());  // a rejoin hands nothing again
  CHECK_FALSE(t.NextDeadline());                  // every hand-off ended in a registration
}

TEST_CASE("launch tree: a child its parent could not start goes back to the launcher once", "[tree]") {
  LaunchTree t(7, 2, seconds(30));
  FakeClock clock;
  REQUIRE(t.OnRegistered(0, clock.Now()) == V{2, 3});
  CHECK_FALSE(t.OnStartEnded(1, 2));  // not node 1's child: a stale or forged report
  CHECK(t.OnStartEnded(0, 2));
  CHECK_FALSE(t.OnStartEnded(0, 2));  // already the launcher's
  CHECK_FALSE(t.OnStartEnded(0, 99));
  // Started from the launcher, it registers and hands its own child on.
  CHECK(t.OnRegistered(2, clock.Now()) == V{6});
  // A registered child's command ending later (its parent's ssh closing) is no failure.
  CHECK(t.OnRegistered(3, clock.Now()).empty());
  CHECK_FALSE(t.OnStartEnded(0, 3));
}

TEST_CASE("launch tree: a hand-off past its deadline goes back to the launcher", "[tree]") {
  LaunchTree t(7, 2, seconds(30));
  FakeClock clock;
  CHECK_FALSE(t.NextDeadline());
  t.OnRegistered(0, clock.Now());
  clock.Advance(seconds(10));
  t.OnRegistered(1, clock.Now());
  REQUIRE(t.NextDeadline());
  CHECK(*t.NextDeadline() == clock.Now() + seconds(20));  // node 0's children, handed 10 s earlier
  t.OnRegistered(2, clock.Now());                         // in time
  clock.Advance(seconds(20));
  CHECK(t.Overdue(clock.Now()) == V{3});
  CHECK(t.Overdue(clock.Now()).empty());
  CHECK_FALSE(t.OnStartEnded(0, 3));  // its parent's late report: the launcher has it already
  CHECK(*t.NextDeadline() == clock.Now() + seconds(10));  // node 1's children, and 2's child
  clock.Advance(seconds(10));
  CHECK(t.Overdue(clock.Now()) == V{4, 5, 6});
  CHECK_FALSE(t.NextDeadline());
}

}  // namespace
}  // namespace ds
