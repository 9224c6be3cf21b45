// Liveness on made-up times (no clock, no timer): Pings once per interval,
// an agent silent at exactly heartbeat_timeout, wakes only at deadlines (not
// on a period), a late wake judging nobody, unwatched agents left alone,
// round trips from echoed stamps.
#include <catch2/catch.hpp>

#include "launcher/coordinator/liveness.h"

namespace ds {
namespace {

using std::chrono::milliseconds;
using V = std::vector<int>;

const Clock::time_point kT0{std::chrono::hours(1)};

Clock::time_point At(double s) { return kT0 + Seconds(s); }

// Interval 1 s, timeout 3 s, three agents watched at kT0.
Liveness Three() {
  Liveness l(3, Seconds(1), Seconds(3));
  l.Start(kT0);
  for (int n = 0; n < 3; ++n) l.Watch(n, kT0);
  return l;
}

TEST_CASE("liveness: a Ping per watched agent once per interval, nothing due between", "[liveness]") {
  Liveness l = Three();
  CHECK(l.NextDeadline() == At(1));
  CHECK(l.Wake(At(0.5)).ping.empty());  // not due: nothing
  for (int n = 0; n < 3; ++n) l.Heard(n, At(0.9));
  Liveness::Due due = l.Wake(At(1));
  CHECK(due.ping == V{0, 1, 2});
  CHECK(due.silent.empty());
  CHECK(l.NextDeadline() == At(2));
}

TEST_CASE("liveness: an agent is silent exactly heartbeat_timeout after it was last heard", "[liveness]") {
  Liveness l(2, Seconds(10), Seconds(3));  // Pings rarer than the timeout: the silence deadline wakes
  l.Start(kT0);
  l.Watch(0, kT0);
  l.Watch(1, kT0);
  l.Heard(0, At(2));
  CHECK(l.NextDeadline() == At(3));  // node 1's, as of its watch
  Liveness::Due due = l.Wake(At(3));
  CHECK(due.silent == V{1});
  l.Unwatch(1);
  CHECK(l.NextDeadline() == At(5));  // node 0's
  CHECK(l.Wake(At(4.999)).silent.empty());
  CHECK(l.Wake(At(5)).silent == V{0});
}

TEST_CASE("liveness: frames move no deadline; a wake at a stale one judges nobody and re-arms", "[liveness]") {
  Liveness l(1, Seconds(10), Seconds(3));
  l.Start(kT0);
  l.Watch(0, kT0);
  l.Heard(0, At(2.5));
  CHECK(l.NextDeadline() == At(3));  // a lower bound, not moved by the frame (O(1) per frame)
  CHECK(l.Wake(At(3)).silent.empty());
  CHECK(l.NextDeadline() == At(5.5));
}

TEST_CASE("liveness: agents beating every interval wake it about once per interval, not every 100 ms",
          "[liveness]") {
  Liveness l = Three();
  int wakes = 0;
  for (double t = 0; t < 10.0; t += 0.25) {  // each agent beats every second, a quarter apart
    const auto now = At(t);
    while (l.NextDeadline() <= now) {
      ++wakes;
      CHECK(l.Wake(l.NextDeadline()).silent.empty());
    }
    l.Heard(static_cast<int>(t * 4) % 3, now);
    if (static_cast<int>(t * 4) % 4 == 3) l.Heard((static_cast<int>(t * 4) + 1) % 3, now);
  }
  CHECK(wakes <= 20);  // 10 Pings and the silence checks between; a 100 ms sweep would be 100
}

TEST_CASE("liveness: a late wake judges nobody, says how late, and looks again 100 ms later", "[liveness]") {
  Liveness l = Three();
  Liveness::Due due = l.Wake(At(10));  // due at 1 s: the thread did not run for 9 s
  CHECK(due.late_s == Approx(9.0));
  CHECK(due.silent.empty());
  CHECK(due.ping == V{0, 1, 2});  // the Pings still go
  CHECK(l.NextDeadline() == At(10.1));
  l.Heard(0, At(10.05));  // the frames that waited are read
  l.Heard(1, At(10.05));
  due = l.Wake(At(10.1));
  CHECK(due.late_s == 0);
  CHECK(due.silent == V{2});  // the one really silent
}

TEST_CASE("liveness: an unwatched agent is neither pinged nor judged", "[liveness]") {
  Liveness l = Three();
  l.Unwatch(1);
  CHECK(l.Wake(At(1)).ping == V{0, 2});
  CHECK(l.Wake(At(2)).ping == V{0, 2});
  Liveness::Due due = l.Wake(At(3));
  CHECK(due.silent == V{0, 2});
  CHECK(due.ping.empty());  // due, but the others are silent
}

TEST_CASE("liveness: an echoed stamp gives the node's round trip; a new agent starts unmeasured", "[liveness]") {
  Liveness l = Three();
  CHECK(l.RoundTrip(1) < 0);  // none yet
  const uint64_t stamp = Liveness::Stamp(At(1));
  CHECK(stamp == Liveness::Stamp(kT0) + 1000000);  // microseconds of the clock
  l.Echoed(1, stamp, At(1.0025));
  CHECK(l.RoundTrip(1) == Approx(0.0025));
  CHECK(l.RoundTrip(0) < 0);  // only the node that echoed
  l.Echoed(1, Liveness::Stamp(At(5)), At(2));  // not a stamp of ours (the future): ignored
  l.Echoed(1, 0, At(2));                       // not an echo: ignored
  CHECK(l.RoundTrip(1) == Approx(0.0025));
  l.Unwatch(1);
  l.Watch(1, At(3));  // it rejoined: another agent, measured afresh
  CHECK(l.RoundTrip(1) < 0);
  CHECK(Liveness::Stamp(Clock::time_point{}) == 1);  // never 0, which asks for no answer
}

}  // namespace
}  // namespace ds
