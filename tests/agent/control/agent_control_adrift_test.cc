// AgentControl without a coordinator (coordinator.grace) on fakes and a fake
// clock: a lost coordinator leaves the workers running; the agent tries a
// new leader every 250 ms, holds what it would have sent and, registered
// again, sends Resume (the generation it kept, its workers) and then what
// it held, in order; when the grace runs out it kills its workers as
// before, and a link that opens and closes again without a leader's frame
// does not buy it more time.
#include <signal.h>

#include <catch2/catch.hpp>

#include "agent/control/agent_control.h"
#include "agent/control/agent_exit.h"
#include "tests/agent/control/fake_agent_seams.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
using testing::AgentFixture;
using wire::MsgType;

Frame FencedPing(uint64_t token) {
  return Frame{MsgType::kFenced, msg::Fenced{token, static_cast<uint32_t>(MsgType::kPing), msg::Ping{}.Encode()}.Encode()};
}

// An agent running ranks 0 and 1 of generation 3 under leader 5, which is then lost.
void RunningThenLost(AgentFixture& f) {
  f.Assign(3, {0, 1});               // bare: admitted while no token was seen
  f.control.OnFrame(FencedPing(5));  // then leader 5's
  REQUIRE(f.control.phase() == AgentPhase::kRunning);
  f.link.sent.clear();
  f.control.OnLinkLost("connection closed by the coordinator");
}

TEST_CASE("AgentControl adrift: the workers run on, what they say is held, and Resume then the held frames go "
          "to the new leader in order") {
  AgentFixture f(10.0);
  RunningThenLost(f);
  CHECK(f.control.phase() == AgentPhase::kAdrift);
  CHECK(f.workers.signals.empty());
  CHECK(f.link.reconnects == 0);
  f.Tick(1ms);  // the first try is at once
  CHECK(f.link.reconnects == 1);
  f.control.OnWorkerLine(0, 1, "step 10");
  f.Exit(1, 0);
  for (int i = 0; i < 8; ++i) f.Tick(250ms);  // no Ping, no progress while adrift; a try every 250 ms
  CHECK(f.link.sent.empty());
  CHECK(f.link.reconnects == 9);
  f.link.leader_up = true;
  f.Tick(250ms);
  CHECK(f.control.phase() == AgentPhase::kRunning);
  REQUIRE(f.link.Types() == std::vector<MsgType>{MsgType::kResume, MsgType::kOutput, MsgType::kWorkerExited});
  const msg::Resume r = f.link.Of<msg::Resume>(MsgType::kResume)[0];
  CHECK(r.generation == 3);
  CHECK(r.running == 1);
  CHECK(r.token_seen == 5);
  REQUIRE(r.workers.size() == 2);
  CHECK((r.workers[0].rank == 0 && r.workers[0].pid == 1000));
  CHECK((r.workers[1].rank == 1 && r.workers[1].pid == 1001));
  CHECK(f.link.Of<msg::WorkerExited>(MsgType::kWorkerExited)[0].rank == 1);
  CHECK(f.link.Of<msg::Output>(MsgType::kOutput)[0].line == "step 10");
  CHECK(f.workers.signals.empty());
  // The new leader's token is admitted, and its Stop commands the kept workers.
  f.control.OnFrame(Frame{MsgType::kFenced,
                          msg::Fenced{9, static_cast<uint32_t>(MsgType::kStop), msg::Stop{3}.Encode()}.Encode()});
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
}

TEST_CASE("AgentControl adrift: when no leader comes within the grace the workers are killed and the agent "
          "leaves as without one") {
  AgentFixture f(2.0);
  RunningThenLost(f);
  for (int i = 0; i < 7; ++i) f.Tick(250ms);
  CHECK(f.control.phase() == AgentPhase::kAdrift);
  CHECK(f.workers.signals.empty());
  f.Tick(250ms);  // 2 s
  CHECK(f.control.phase() == AgentPhase::kQuitting);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  CHECK(f.workers.SignalsTo(1) == std::vector<int>{SIGTERM});
  f.Exit(0, 0, SIGTERM);
  f.Exit(1, 0, SIGTERM);
  CHECK(f.control.finished());
  CHECK(f.control.exit_code() == ExitCode(AgentExit::kLostCoordinator));
  CHECK(f.link.reconnects == 7);
}

TEST_CASE("AgentControl adrift: a link that opens and closes again without a leader's frame does not restart "
          "the grace") {
  AgentFixture f(2.0);
  RunningThenLost(f);
  f.Tick(1s);
  f.link.leader_up = true;  // something answers and takes the Register ...
  f.Tick(250ms);
  CHECK(f.control.phase() == AgentPhase::kRunning);
  f.link.leader_up = false;
  f.control.OnLinkLost("connection closed by the coordinator");  // ... and drops it: no leader
  CHECK(f.control.phase() == AgentPhase::kAdrift);
  f.Tick(750ms);  // 2 s since the first loss
  CHECK(f.control.phase() == AgentPhase::kQuitting);
}

TEST_CASE("AgentControl adrift: an idle agent resumes idle; without a grace, or during a stop, the agent leaves "
          "at once as before") {
  SECTION("idle") {
    AgentFixture f(5.0);
    f.control.OnLinkLost("reset");
    CHECK(f.control.phase() == AgentPhase::kAdrift);
    f.link.leader_up = true;
    f.Tick(1ms);
    CHECK(f.control.phase() == AgentPhase::kIdle);
    const msg::Resume r = f.link.Of<msg::Resume>(MsgType::kResume).at(0);
    CHECK(r.running == 0);
    CHECK(r.workers.empty());
  }
  SECTION("no grace") {
    AgentFixture f;
    f.Assign(3, {0});
    f.control.OnLinkLost("reset");
    CHECK(f.control.phase() == AgentPhase::kQuitting);
    CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  }
  SECTION("stopping") {
    AgentFixture f(5.0);
    f.Assign(3, {0});
    f.Stop(3);
    f.control.OnLinkLost("reset");
    CHECK(f.control.phase() == AgentPhase::kQuitting);
  }
}

TEST_CASE("AgentControl adrift: with standby coordinators named (Coordinators) each is tried in turn") {
  AgentFixture f(10.0);
  f.Assign(3, {0});
  f.control.OnFrame(Frame{MsgType::kFenced, msg::Fenced{5, static_cast<uint32_t>(MsgType::kCoordinators),
                                                        msg::Coordinators{{"10.0.0.1:700", "10.0.0.2:800"}}.Encode()}
                                                .Encode()});
  f.control.OnLinkLost("reset");
  for (int i = 0; i < 3; ++i) f.Tick(250ms);
  CHECK(f.link.tried == std::vector<std::string>{"10.0.0.1:700", "10.0.0.2:800", "10.0.0.1:700"});
}

TEST_CASE("AgentControl adrift: a termination signal while adrift kills the workers and nothing is handed over") {
  AgentFixture f(10.0);
  RunningThenLost(f);
  f.control.OnTerminationSignal(SIGTERM);
  CHECK(f.control.phase() == AgentPhase::kQuitting);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  f.link.leader_up = true;
  f.Tick(1s);
  CHECK(f.link.reconnects == 0);
  CHECK(f.link.Count(MsgType::kResume) == 0);
}

}  // namespace
}  // namespace ds
