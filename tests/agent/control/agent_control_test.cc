// AgentControl's first half (agent/control/agent_control.cc) on fakes and a fake
// clock: the coordinator's frames, starting a generation, output and step
// beats, snapshots and the launch tree. Stopping, leaving and time are in
// agent_control_stop_test.cc.
#include "agent/control/agent_control.h"

#include <signal.h>

#include <catch2/catch.hpp>

#include "agent/control/agent_exit.h"
#include "tests/agent/control/fake_agent_seams.h"
#include "wire/step_heartbeat.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
using testing::AgentFixture;
using wire::MsgType;

TEST_CASE("AgentControl: registered it is idle; Reserve holds the port and answers Reserved") {
  AgentFixture f;
  CHECK(f.control.phase() == AgentPhase::kIdle);
  f.Deliver(MsgType::kReserve, msg::Reserve{0, 0});
  auto r = f.link.Of<msg::Reserved>(MsgType::kReserved);
  REQUIRE(r.size() == 1);
  CHECK(r[0].port == 29500);
  CHECK(r[0].error.empty());
  CHECK(f.workers.held == 29500);

  f.workers.hold_error = "bind 0.0.0.0:29500: Address already in use";
  f.Deliver(MsgType::kReserve, msg::Reserve{1, 29500});
  r = f.link.Of<msg::Reserved>(MsgType::kReserved);
  REQUIRE(r.size() == 2);
  CHECK(r[1].generation == 1);
  CHECK(r[1].error == "bind 0.0.0.0:29500: Address already in use");
  CHECK(f.control.phase() == AgentPhase::kIdle);
}

TEST_CASE("AgentControl: Assign starts every worker with its own beat token and reports each one started") {
  AgentFixture f;
  f.Deliver(MsgType::kReserve, msg::Reserve{3, 0});
  f.Assign(3, {4, 5});
  CHECK(f.control.phase() == AgentPhase::kRunning);
  CHECK(f.control.generation() == 3);
  REQUIRE(f.workers.assigns.size() == 1);
  CHECK(f.workers.port_at_start == 29500);  // held until the workers start (the launcher lets it go then)
  REQUIRE(f.workers.tokens.size() == 2);
  CHECK(f.workers.tokens[0].size() == kStepBeatTokenChars);
  CHECK(f.workers.tokens[0] != f.workers.tokens[1]);
  CHECK(f.workers.last_snapshot_dir.empty());  // snapshots off
  CHECK(f.workers.leftover_sweeps == 1);       // nothing of an earlier generation meets this one
  auto started = f.link.Of<msg::WorkerStarted>(MsgType::kWorkerStarted);
  REQUIRE(started.size() == 2);
  CHECK(started[0].generation == 3);
  CHECK(started[0].rank == 4);
  CHECK(started[0].pid == 1004);
  CHECK(started[1].rank == 5);
}

TEST_CASE("AgentControl: a worker that cannot start gets its reason on stderr and exit code 127") {
  AgentFixture f;
  f.workers.start_errors[1] = "dsagent: exec train: No such file or directory";
  f.Assign(0, {0, 1});
  auto lines = f.link.Of<msg::Output>(MsgType::kOutput);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rank == 1);
  CHECK(lines[0].stream == 2);
  CHECK(lines[0].line == "dsagent: exec train: No such file or directory");
  auto exited = f.link.Of<msg::WorkerExited>(MsgType::kWorkerExited);
  REQUIRE(exited.size() == 1);
  CHECK(exited[0].rank == 1);
  CHECK(exited[0].exit_code == 127);
  CHECK(exited[0].spawn_failed == 1);
  CHECK(f.link.Count(MsgType::kWorkerStarted) == 1);
  CHECK(f.control.phase() == AgentPhase::kRunning);
}

TEST_CASE("AgentControl: workers that end during the assignment are reported once, and a Stop then ends at once") {
  AgentFixture f;
  f.workers.start_errors[0] = "dsagent: fork: Resource temporarily unavailable";
  f.Assign(2, {0, 1});
  WorkerExit e{1, 1001, 3, 0, TorchError{"ValueError: bad", "Traceback ..."}};
  f.control.OnWorkerExited(e);
  f.control.OnWorkerExited(e);                          // reaped twice: reported once
  f.control.OnWorkerExited(WorkerExit{9, 1009, 0, 0, {}});  // not a worker of this generation
  auto exited = f.link.Of<msg::WorkerExited>(MsgType::kWorkerExited);
  REQUIRE(exited.size() == 2);
  CHECK(exited[1].generation == 2);
  CHECK(exited[1].rank == 1);
  CHECK(exited[1].exit_code == 3);
  CHECK(exited[1].error_message == "ValueError: bad");
  CHECK(exited[1].error_trace == "Traceback ...");
  CHECK(f.control.phase() == AgentPhase::kRunning);  // the coordinator decides
  f.Stop(2);
  CHECK(f.workers.signals.empty());  // nothing left to signal
  CHECK(f.link.Of<msg::Stopped>(MsgType::kStopped).size() == 1);
  CHECK(f.control.phase() == AgentPhase::kIdle);
}

TEST_CASE("AgentControl: a clean exit carries no error text, a line keeps its rank, stream and generation") {
  AgentFixture f;
  f.Assign(1, {0});
  f.control.OnWorkerLine(0, 1, "step 1 loss 0.5");
  f.control.OnWorkerExited(WorkerExit{0, 1000, 0, 0, TorchError{"stale", "stale"}});
  auto lines = f.link.Of<msg::Output>(MsgType::kOutput);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].generation == 1);
  CHECK(lines[0].stream == 1);
  CHECK(lines[0].line == "step 1 loss 0.5");
  auto exited = f.link.Of<msg::WorkerExited>(MsgType::kWorkerExited);
  REQUIRE(exited.size() == 1);
  CHECK(exited[0].error_message.empty());
  CHECK(f.link.Types().back() == MsgType::kWorkerExited);  // the line went before its worker's end
}

TEST_CASE("AgentControl: progress updates go at most every 50 ms, the newest when due; a line drops a kept one") {
  AgentFixture f;
  f.Assign(1, {0, 1});
  const int progress = 2 | msg::kOutputProgress;
  f.control.OnWorkerLine(0, progress, " 1%");
  f.control.OnWorkerLine(0, progress, " 2%");   // too soon: kept
  f.control.OnWorkerLine(0, progress, " 3%");   // replaces it
  f.control.OnWorkerLine(1, progress, "r1 1%");  // another rank: its own limit
  auto sent = f.link.Of<msg::Output>(MsgType::kOutput);
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].stream == progress);
  CHECK(sent[0].line == " 1%");
  CHECK(sent[1].line == "r1 1%");
  REQUIRE(f.control.NextDeadline() == f.clock.Now() + 50ms);
  f.Tick(50ms);
  sent = f.link.Of<msg::Output>(MsgType::kOutput);
  REQUIRE(sent.size() == 3);
  CHECK(sent[2].rank == 0);
  CHECK(sent[2].stream == progress);
  CHECK(sent[2].line == " 3%");
  f.control.OnWorkerLine(0, progress, " 4%");  // kept again
  f.control.OnWorkerLine(0, 2, "100%");        // the completed line replaces it
  f.Tick(1s);
  sent = f.link.Of<msg::Output>(MsgType::kOutput);
  REQUIRE(sent.size() == 4);
  CHECK(sent[3].stream == 2);
  CHECK(sent[3].line == "100%");
}

TEST_CASE("AgentControl: a bad or unexpected frame loses the coordinator") {
  AgentFixture f;
  f.Assign(0, {0});
  SECTION("undecodable") { f.control.OnFrame(Frame{MsgType::kAssign, Bytes{1, 2}}); }
  SECTION("a type the agent never gets") { f.control.OnFrame(Frame{MsgType::kStopped, {}}); }
  CHECK_FALSE(f.link.open());
  CHECK(f.control.phase() == AgentPhase::kQuitting);
  CHECK(f.control.exit_code() == ExitCode(AgentExit::kLostCoordinator));
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
}

TEST_CASE("AgentControl: SnapshotSetup answers Ready after what the disk holds; workers then get the directory") {
  AgentFixture f;
  msg::SnapshotHeld held;
  f.snapshots.outgoing.push_back({MsgType::kSnapshotHeld, held.Encode()});
  f.Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
  REQUIRE(f.link.Types() == std::vector<MsgType>{MsgType::kSnapshotHeld, MsgType::kSnapshotReady});
  auto ready = f.link.Of<msg::SnapshotReady>(MsgType::kSnapshotReady);
  CHECK(ready[0].peer_addr == "127.0.0.1:7000");
  CHECK(ready[0].memory_dir == "/dev/shm/snap");
  f.Deliver(MsgType::kReplicate, msg::Replicate{});
  msg::Fetch fetch;
  fetch.step = -1;  // start fresh
  fetch.id.run = "ab";
  f.Deliver(MsgType::kFetch, fetch);
  CHECK(f.snapshots.targets.size() == 1);
  CHECK(f.snapshots.fetches.size() == 1);
  f.Assign(0, {0});
  CHECK(f.workers.last_snapshot_dir == "/dev/shm/snap");
}

TEST_CASE("AgentControl: a keeper that cannot start is named in Ready; a Fetch then says snapshots are off") {
  AgentFixture f;
  f.snapshots.start_error = "mkdtemp /dev/shm: No space left on device";
  f.Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
  auto ready = f.link.Of<msg::SnapshotReady>(MsgType::kSnapshotReady);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].error == "host node7: mkdtemp /dev/shm: No space left on device");
  msg::Fetch fetch;
  fetch.generation = 4;
  fetch.step = -1;
  fetch.id.run = "ab";
  f.Deliver(MsgType::kFetch, fetch);
  auto fetched = f.link.Of<msg::Fetched>(MsgType::kFetched);
  REQUIRE(fetched.size() == 1);
  CHECK(fetched[0].generation == 4);
  CHECK(fetched[0].error == "snapshots are off on this node");
}

TEST_CASE("AgentControl: a failed snapshot thread makes the agent leave with its own exit code") {
  AgentFixture f;
  f.Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
  f.Assign(0, {0});
  f.snapshots.failed = "persist: disk full";
  f.control.OnSnapshotEvents();
  CHECK(f.control.phase() == AgentPhase::kQuitting);
  CHECK(f.control.exit_code() == ExitCode(AgentExit::kInternalError));
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  f.Exit(0, 0, SIGTERM);
  CHECK(f.control.finished());
  CHECK(f.snapshots.finished_handoffs == 1);
}

TEST_CASE("AgentControl: StartAgents reports a command that cannot start at once; the others' ends as they come") {
  AgentFixture f;
  msg::StartAgents m;
  m.agents.push_back({8, "node8", {"ssh", "node8"}, "t8"});
  m.agents.push_back({9, "node9", {}, "t9"});
  f.Deliver(MsgType::kStartAgents, m);
  auto ended = f.link.Of<msg::AgentEnded>(MsgType::kAgentEnded);
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].node == 9);
  CHECK(f.tree.children == 1);
  f.control.OnChildEnded(msg::AgentEnded{8, 255, 0, "ssh: connect to host node8: No route to host"});
  ended = f.link.Of<msg::AgentEnded>(MsgType::kAgentEnded);
  REQUIRE(ended.size() == 2);
  CHECK(ended[1].reason == "ssh: connect to host node8: No route to host");
}

TEST_CASE("AgentControl: a step beat counts only with the worker's own token") {
  AgentFixture f;
  f.Assign(0, {0}, /*hang_ms=*/500);
  const auto idle = f.control.NextDeadline();
  f.control.OnStepBeat({0, 1, std::string(kStepBeatTokenChars, 'x')});  // someone else's guess
  f.control.OnStepBeat({1LL << 32, 1, f.workers.tokens[0]});            // a rank that wraps to 0 is not 0
  CHECK(f.control.NextDeadline() == idle);                          // no hang check armed
  f.control.OnStepBeat({0, 1, f.workers.tokens[0]});
  CHECK(f.control.NextDeadline() == f.clock.Now() + 500ms);  // before the next Ping (1 s)
}

TEST_CASE("AgentControl: the ranks that stepped ride with the next Ping as one Progress summary") {
  AgentFixture f;
  f.Assign(4, {6, 7});
  f.Tick(1s);
  CHECK(f.link.Count(MsgType::kProgress) == 0);  // nobody stepped: a bare Ping
  f.control.OnStepBeat({6, 10, f.workers.tokens[0], 80000, 32});
  f.Tick(100ms);
  f.control.OnStepBeat({6, 11, f.workers.tokens[0], 90000, 32});
  f.Tick(100ms);
  f.control.OnStepBeat({6, 12, f.workers.tokens[0], 90000, 32});
  f.control.OnStepBeat({7, 1, std::string(kStepBeatTokenChars, 'x')});  // not rank 7's token: not summarised
  CHECK(f.link.Count(MsgType::kProgress) == 0);  // nothing per step
  f.Tick(800ms);
  auto progress = f.link.Of<msg::Progress>(MsgType::kProgress);
  REQUIRE(progress.size() == 1);
  CHECK(progress[0].generation == 4);
  REQUIRE(progress[0].ranks.size() == 1);
  const msg::RankStat& s = progress[0].ranks[0];
  CHECK(s.rank == 6);
  CHECK(s.step == 12);
  CHECK(s.step_micros == 100000);
  CHECK(s.compute_micros == 90000);   // the steps after the first beat
  CHECK(s.samples_milli == 320000);   // 32 samples per 0.1 s step
  f.Tick(1s);
  CHECK(f.link.Count(MsgType::kProgress) == 1);  // no news: no summary
}

TEST_CASE("AgentControl: a new generation's summary forgets the last one's steps") {
  AgentFixture f;
  f.Assign(0, {0});
  f.control.OnStepBeat({0, 50, f.workers.tokens[0]});
  f.Exit(0, 1);
  f.Stop(0);
  f.Assign(1, {0});
  f.control.OnStepBeat({0, 3, f.workers.tokens[0]});  // resumed from an older snapshot
  f.Tick(1s);
  auto progress = f.link.Of<msg::Progress>(MsgType::kProgress);
  REQUIRE(progress.size() == 2);  // generation 0's at its worker's exit, then generation 1's
  CHECK(progress[1].generation == 1);
  REQUIRE(progress[1].ranks.size() == 1);
  CHECK(progress[1].ranks[0].step == 3);
}

TEST_CASE("AgentControl: a worker's exit sends what its beats said since the last Ping first") {
  AgentFixture f;
  f.Assign(2, {0});
  StepBeat last{0, 200, f.workers.tokens[0], -1, 64};
  last.loss = 0.25;
  f.control.OnStepBeat(last);
  f.Exit(0, 0);  // long before the next Ping
  auto progress = f.link.Of<msg::Progress>(MsgType::kProgress);
  REQUIRE(progress.size() == 1);
  CHECK(progress[0].ranks[0].step == 200);
  CHECK(progress[0].ranks[0].loss_step == 200);
  CHECK(progress[0].ranks[0].loss == 0.25);
  CHECK(f.link.Types().back() == MsgType::kWorkerExited);  // after the summary
}

}  // namespace
}  // namespace ds
