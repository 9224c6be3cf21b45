// AgentSession's timing without sockets: the poll timeout derived from the
// next deadline, driven by a FakeClock.
#include "agent/agent_session.h"

#include <catch2/catch.hpp>

#include "common/clock.h"

namespace ds {
namespace {

using namespace std::chrono_literals;

TEST_CASE("PollTimeoutUntil: no deadline waits for events, a due one returns at once, else rounds up") {
  FakeClock clock;
  auto now = clock.Now();
  CHECK(PollTimeoutUntil(std::nullopt, now) == -1);
  CHECK(PollTimeoutUntil(now, now) == 0);
  CHECK(PollTimeoutUntil(now - 5ms, now) == 0);
  CHECK(PollTimeoutUntil(now + 1ms, now) == 1);
  CHECK(PollTimeoutUntil(now + 1us, now) == 1);  // never wakes before the deadline
  CHECK(PollTimeoutUntil(now + 999'500us, now) == 1000);
  CHECK(PollTimeoutUntil(now + 1000h, now) == 24 * 3600 * 1000);  // capped, fits poll()'s int
}

TEST_CASE("AgentSession: before Connect nothing is timed, so the loop would only wait for events") {
  FakeClock clock;
  AgentOptions o;
  o.coordinator = "127.0.0.1:1";
  o.node_index = 0;
  o.job_id = "j";
  AgentSession session(o, "secret", clock);
  CHECK_FALSE(session.NextDeadline().has_value());
  CHECK(session.PollTimeoutMs() == -1);
  clock.Advance(1h);
  session.CheckTimers();  // nothing due: no Ping on a closed connection, nothing to kill
  CHECK_FALSE(session.Finished());
  CHECK(session.PollTimeoutMs() == -1);
}

}  // namespace
}  // namespace ds
