// AgentControl's second half (agent/control/agent_control_stop.cc) on fakes and a
// fake clock: Stop, SIGKILL after the grace, leaving the job (Shutdown, a
// lost coordinator, signals) in every phase, hung workers, the heartbeat
// timers, and the moves the phase table refuses.
#include "agent/control/agent_control.h"

#include <signal.h>

#include <catch2/catch.hpp>

#include "agent/control/agent_exit.h"
#include "tests/agent/control/fake_agent_seams.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
using testing::AgentFixture;
using wire::MsgType;

TEST_CASE("AgentControl: Stop sends SIGTERM, SIGKILL only after the grace, then Stopped and idle") {
  AgentFixture f;
  f.Assign(1, {0, 1});
  f.Stop(1);
  CHECK(f.control.phase() == AgentPhase::kStopping);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  CHECK(f.workers.SignalsTo(1) == std::vector<int>{SIGTERM});
  CHECK(f.control.NextDeadline() == f.clock.Now() + 1s);  // the grace (the Ping is due then too)
  f.Exit(0, 0, SIGTERM);
  f.Tick(999ms);
  CHECK(f.workers.SignalsTo(1) == std::vector<int>{SIGTERM});
  f.Tick(1ms);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});  // it had ended
  CHECK(f.workers.SignalsTo(1) == std::vector<int>{SIGTERM, SIGKILL});
  CHECK(f.link.Count(MsgType::kStopped) == 0);
  const int sweeps = f.workers.leftover_sweeps;
  f.Exit(1, 0, SIGKILL);
  auto stopped = f.link.Of<msg::Stopped>(MsgType::kStopped);
  REQUIRE(stopped.size() == 1);
  CHECK(stopped[0].generation == 1);
  CHECK(f.workers.leftover_sweeps == sweeps + 1);  // the generation's leftovers go before Stopped
  CHECK(f.control.phase() == AgentPhase::kIdle);
  CHECK(f.link.Types().back() == MsgType::kStopped);  // after both WorkerExited
}

TEST_CASE("AgentControl: a Stop with no workers is answered at once; a stale one is ignored") {
  AgentFixture f;
  f.Stop(0);
  CHECK(f.link.Of<msg::Stopped>(MsgType::kStopped).size() == 1);
  CHECK(f.control.phase() == AgentPhase::kIdle);
  f.Assign(2, {0});
  f.Stop(1);  // an older generation's, late
  CHECK(f.workers.signals.empty());
  CHECK(f.control.phase() == AgentPhase::kRunning);
  CHECK(f.link.Of<msg::Stopped>(MsgType::kStopped).size() == 1);
}

TEST_CASE("AgentControl: Stop releases a held MASTER_PORT") {
  AgentFixture f;
  f.Deliver(MsgType::kReserve, msg::Reserve{0, 0});
  REQUIRE(f.workers.held == 29500);
  f.Stop(0);
  CHECK(f.workers.held == 0);
}

TEST_CASE("AgentControl: the next generation's Assign while stopping starts it; the old SIGKILL is not carried over") {
  AgentFixture f;
  f.Assign(0, {0});
  f.Stop(0);
  f.Assign(1, {0});
  CHECK(f.control.phase() == AgentPhase::kRunning);
  CHECK(f.control.generation() == 1);
  f.Tick(2s);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});  // the new worker gets no SIGKILL
}

TEST_CASE("AgentControl: the coordinator lost while stopping: the workers still go (one SIGTERM), the agent leaves with 4") {
  AgentFixture f;
  f.Assign(0, {0});
  f.Stop(0);
  f.control.OnLinkLost("connection closed by the coordinator");
  CHECK_FALSE(f.link.open());
  CHECK(f.control.phase() == AgentPhase::kQuitting);
  CHECK(f.control.exit_code() == ExitCode(AgentExit::kLostCoordinator));
  f.Tick(1s);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM, SIGKILL});
  CHECK_FALSE(f.control.finished());
  f.Exit(0, 0, SIGKILL);
  CHECK(f.control.finished());
  CHECK(f.link.Count(MsgType::kStopped) == 0);  // nobody to tell
}

TEST_CASE("AgentControl: a silent coordinator is lost after heartbeat_timeout; a Ping goes every interval") {
  AgentFixture f;
  CHECK(f.control.NextDeadline() == f.clock.Now() + 1s);
  f.Tick(1s);
  CHECK(f.link.Count(MsgType::kPing) == 1);
  f.Tick(1s);
  CHECK(f.link.Count(MsgType::kPing) == 2);
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});  // heard at 2 s: lost at 5 s
  f.Tick(2999ms);
  CHECK(f.link.open());
  f.Tick(1ms);
  CHECK_FALSE(f.link.open());
  CHECK(f.control.finished());  // no workers to wait for
  CHECK(f.control.exit_code() == ExitCode(AgentExit::kLostCoordinator));
  CHECK_FALSE(f.control.NextDeadline().has_value());  // nothing timed is left
}

TEST_CASE("AgentControl: a stamped Ping is answered at once with its stamp; a bare one is not answered") {
  AgentFixture f;
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{123456789, 0}.Encode()});
  auto pings = f.link.Of<msg::Ping>(MsgType::kPing);
  REQUIRE(pings.size() == 1);  // before any interval passed: the answer, not the agent's own Ping
  CHECK(pings[0].sent_micros == 0);  // an answer is never answered
  CHECK(pings[0].echo_micros == 123456789);
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{0, 77}.Encode()});  // an echo (a confused peer): not answered
  CHECK(f.link.Count(MsgType::kPing) == 1);
  f.Tick(1s);  // the agent's own Ping: no stamp
  pings = f.link.Of<msg::Ping>(MsgType::kPing);
  REQUIRE(pings.size() == 2);
  CHECK(pings[1].sent_micros == 0);
  CHECK(pings[1].echo_micros == 0);
  CHECK(f.link.open());
}

TEST_CASE("AgentControl: a stop during a snapshot hand-off keeps relaying the keeper; leaving waits for the hand-off") {
  AgentFixture f;
  f.Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
  f.Assign(0, {0});
  msg::SnapshotHeld held;
  held.added.push_back(msg::ShardEntry{});
  SECTION("Stop: the keeper's news still goes up while stopping, and the keeper carries on") {
    f.Stop(0);
    f.snapshots.outgoing.push_back({MsgType::kSnapshotHeld, held.Encode()});
    f.control.OnSnapshotEvents();
    CHECK(f.link.Count(MsgType::kSnapshotHeld) == 1);
    f.Exit(0, 0, SIGTERM);
    CHECK(f.link.Types().back() == MsgType::kStopped);
    CHECK(f.snapshots.finished_handoffs == 0);
    CHECK(f.control.phase() == AgentPhase::kIdle);
  }
  SECTION("Shutdown: the pending hand-off reaches the disk and is reported before the agent finishes") {
    f.snapshots.pending.push_back({MsgType::kSnapshotHeld, held.Encode()});
    f.Shutdown();
    CHECK(f.snapshots.finished_handoffs == 0);  // the worker may still be writing
    f.Exit(0, 0, SIGTERM);
    CHECK(f.snapshots.finished_handoffs == 1);
    CHECK(f.link.Count(MsgType::kSnapshotHeld) == 1);
    CHECK(f.control.finished());
    CHECK(f.control.exit_code() == ExitCode(AgentExit::kShutdown));
  }
}

TEST_CASE("AgentControl: a termination signal in each phase") {
  AgentFixture f;
  SECTION("idle: the agent ends at once with 128+sig") {
    f.control.OnTerminationSignal(SIGTERM);
    CHECK(f.control.finished());
    CHECK(f.control.exit_code() == SignalExitCode(SIGTERM));
  }
  SECTION("running: the workers get SIGTERM, the agent ends when they have") {
    f.Assign(0, {0});
    f.control.OnTerminationSignal(SIGINT);
    CHECK(f.control.phase() == AgentPhase::kQuitting);
    CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
    f.Exit(0, 0, SIGTERM);
    CHECK(f.control.finished());
    CHECK(f.control.exit_code() == SignalExitCode(SIGINT));
    CHECK(f.link.Count(MsgType::kStopped) == 0);  // nobody asked
  }
  SECTION("stopping: the Stop is still answered before the agent ends") {
    f.Assign(0, {0});
    f.Stop(0);
    f.control.OnTerminationSignal(SIGHUP);
    CHECK(f.control.phase() == AgentPhase::kQuitting);
    f.Exit(0, 0, SIGTERM);
    CHECK(f.link.Count(MsgType::kStopped) == 1);
    CHECK(f.control.finished());
    CHECK(f.control.exit_code() == SignalExitCode(SIGHUP));
  }
  SECTION("quitting: a second signal SIGKILLs at once") {
    f.Assign(0, {0});
    f.control.OnTerminationSignal(SIGTERM);
    f.control.OnTerminationSignal(SIGTERM);
    CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM, SIGKILL});
    CHECK(f.control.exit_code() == SignalExitCode(SIGTERM));  // the first one's
  }
  SECTION("lingering and finished: nothing changes") {
    f.tree.children = 1;
    f.Shutdown();
    REQUIRE(f.control.phase() == AgentPhase::kLingering);
    f.control.OnTerminationSignal(SIGTERM);
    CHECK(f.control.phase() == AgentPhase::kLingering);
    f.tree.children = 0;
    f.control.OnChildEnded(msg::AgentEnded{8, 0, 0, ""});
    REQUIRE(f.control.finished());
    f.control.OnTerminationSignal(SIGTERM);
    CHECK(f.control.finished());
    CHECK(f.control.exit_code() == ExitCode(AgentExit::kShutdown));
  }
}

TEST_CASE("AgentControl: after Shutdown the launch tree's agents get stop grace + heartbeat_timeout to end") {
  AgentFixture f;
  f.tree.children = 2;
  f.Shutdown();
  CHECK(f.control.phase() == AgentPhase::kLingering);
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
  f.control.OnLinkLost("connection closed by the coordinator");  // expected after Shutdown
  CHECK(f.control.exit_code() == ExitCode(AgentExit::kShutdown));
  CHECK(f.control.NextDeadline() == f.clock.Now() + 4s);  // 1 s grace + 3 s
  f.Tick(3999ms);
  CHECK(f.control.phase() == AgentPhase::kLingering);
  f.Tick(1ms);
  CHECK(f.control.finished());
}

TEST_CASE("AgentControl: a worker silent for hang_timeout is reported first, its stacks taken before any kill") {
  AgentFixture f;
  f.Assign(0, {0, 1}, /*hang_ms=*/1500);
  f.control.OnStepBeat({0, 1, f.workers.tokens[0]});
  f.Tick(1499ms);
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
  CHECK(f.link.Count(MsgType::kWorkerHung) == 0);
  f.Tick(1ms);
  auto hung = f.link.Of<msg::WorkerHung>(MsgType::kWorkerHung);
  REQUIRE(hung.size() == 1);
  CHECK(hung[0].rank == 0);
  CHECK(hung[0].silent_ms == 1500);
  CHECK(f.workers.signals.empty());  // the coordinator takes every rank's stacks first
  auto lines = f.link.Of<msg::Output>(MsgType::kOutput);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].line == "dsagent: rank 0 made no step for 1500 ms; every rank's stacks are taken before the job is "
                         "stopped");
  // The coordinator's Stop ends it as every worker is ended.
  f.Stop(0);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  CHECK(f.link.Count(MsgType::kWorkerHung) == 1);  // said once
}

TEST_CASE("AgentControl: a hung worker no stop came for within the grace is killed and reported hung") {
  AgentFixture f;
  f.Assign(0, {0, 1}, /*hang_ms=*/1500);
  f.control.OnStepBeat({0, 1, f.workers.tokens[0]});
  f.Tick(1500ms);
  REQUIRE(f.link.Count(MsgType::kWorkerHung) == 1);
  for (int i = 0; i < 7; ++i) {  // the coordinator answers Pings but never stops the generation
    f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
    f.Tick(2s);
  }
  CHECK(f.workers.SignalsTo(0).empty());  // 14 s of the 15 s grace
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
  f.Tick(1s);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGKILL});
  CHECK(f.workers.SignalsTo(1).empty());  // never beat: never judged
  auto lines = f.link.Of<msg::Output>(MsgType::kOutput);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].line == "dsagent: rank 0 made no step for 1500 ms; killing it");
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
  f.Tick(2s);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGKILL});  // once
  f.Exit(0, 0, SIGKILL);
  auto exited = f.link.Of<msg::WorkerExited>(MsgType::kWorkerExited);
  REQUIRE(exited.size() == 1);
  CHECK(exited[0].hung == 1);
  CHECK(exited[0].signal == SIGKILL);
}

TEST_CASE("AgentControl: no hang is judged while stopping") {
  AgentFixture f;
  f.Assign(0, {0}, /*hang_ms=*/500);
  f.control.OnStepBeat({0, 1, f.workers.tokens[0]});
  f.Stop(0);
  f.Tick(600ms);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  CHECK(f.link.Count(MsgType::kOutput) == 0);
}

TEST_CASE("AgentControl: a Shutdown carrying the job's failed status (the per-node form) ends the agent with it") {
  AgentFixture f;
  f.Assign(0, {0});
  f.Shutdown(3);
  f.Exit(0, 0, SIGTERM);
  CHECK(f.control.finished());
  CHECK(f.control.exit_code() == 3);
}

TEST_CASE("AgentControl: moves the phase table refuses drop their event") {
  AgentFixture f;
  f.Assign(0, {0});
  f.Shutdown();
  REQUIRE(f.control.phase() == AgentPhase::kQuitting);
  SECTION("an Assign while leaving starts no worker") {
    f.Assign(1, {0});
    CHECK(f.workers.assigns.size() == 1);
    CHECK(f.control.phase() == AgentPhase::kQuitting);
    CHECK(f.control.generation() == 0);
  }
  SECTION("a signal while leaving does not change the exit code") {
    f.control.OnTerminationSignal(SIGTERM);
    CHECK(f.control.exit_code() == ExitCode(AgentExit::kShutdown));
  }
  SECTION("once finished, no frame moves it") {
    f.Exit(0, 0, SIGTERM);
    REQUIRE(f.control.finished());
    const size_t sent = f.link.sent.size();
    f.Assign(1, {0});
    f.Stop(1);
    f.Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
    CHECK(f.control.finished());
    CHECK(f.workers.assigns.size() == 1);
    CHECK(f.link.sent.size() == sent);
  }
}

}  // namespace
}  // namespace ds
