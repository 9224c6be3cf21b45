// AgentControl's in-place recovery (agent/control/reshape.cc) on fakes and a
// fake clock: Reshape keeps the workers and renumbers them, gathers the save,
// tells each worker, answers Reshaped; a replacement's Assign waits for the
// gather and starts beside them; the deadline, a failed gather, a worker that
// ends or cannot be told each show in the answer.
#include <signal.h>

#include <catch2/catch.hpp>

#include "agent/control/agent_control.h"
#include "tests/agent/control/fake_agent_seams.h"
#include "wire/step_heartbeat.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
using testing::AgentFixture;
using wire::MsgType;

// Generation 3 running ranks 4 and 5 here, snapshots on.
struct ReshapeFixture : AgentFixture {
  ReshapeFixture() {
    Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
    Assign(3, {4, 5});
    link.sent.clear();
  }
  msg::Reshape Make(std::vector<msg::RankMove> moves, uint32_t deadline_ms = 5000) {
    return MakeReshape(std::move(moves), deadline_ms);
  }
  static msg::Reshape MakeReshape(std::vector<msg::RankMove> moves, uint32_t deadline_ms = 5000) {
    msg::Reshape r;
    r.generation = 4;
    r.step = 120;
    r.id = msg::SnapshotId{"feed0001", 6, 0, "c0", "00000000abc12345"};
    r.world = 6;
    r.moves = std::move(moves);
    r.sources = {{2, 1, "10.0.0.2:7000"}};
    r.deadline_ms = deadline_ms;
    return r;
  }
  void Fetched(const std::string& error = "") {
    snapshots.outgoing.emplace_back(MsgType::kFetched, msg::Fetched{4, 120, "00000000abc12345", 4096, 900, error}.Encode());
    control.OnSnapshotEvents();
  }
  void Answer(int rank, bool ok, const std::string& why = "") {
    control.OnWorkerControl(rank, Frame{MsgType::kWorkerReshaped, msg::WorkerReshaped{4, ok, why, 30}.Encode()});
  }
  std::vector<msg::Reshaped> Answers() const { return link.Of<msg::Reshaped>(MsgType::kReshaped); }
};

TEST_CASE("AgentControl reshape: the workers stay, take their new ranks, roll back after the gather, and the node answers") {
  ReshapeFixture f;
  f.Deliver(MsgType::kReshape, f.Make({{4, 2}, {5, 3}}));
  // Nothing of the old generation is stopped or swept away.
  CHECK(f.workers.signals.empty());
  CHECK(f.workers.leftover_sweeps == 1);  // the Assign's, none since
  CHECK(f.control.generation() == 4);
  REQUIRE(f.workers.renumbered.size() == 1);
  CHECK(f.workers.renumbered[0].size() == 2);
  // The gather first: the Fetch path with the Reshape's save and sources.
  REQUIRE(f.snapshots.fetches.size() == 1);
  CHECK(f.snapshots.fetches[0].generation == 4);
  CHECK(f.snapshots.fetches[0].step == 120);
  CHECK(f.snapshots.fetches[0].id.set == "00000000abc12345");
  CHECK(f.snapshots.fetches[0].sources.size() == 1);
  CHECK(f.workers.control.empty());  // no worker is told before the node holds the save

  f.clock.Advance(7ms);
  f.Fetched();
  CHECK(f.link.Count(MsgType::kFetched) == 0);  // the reshape's: answered in Reshaped, not on its own
  REQUIRE(f.workers.control.size() == 2);
  CHECK(f.workers.control[0].first == 2);
  CHECK(f.workers.control[0].second.generation == 4);
  CHECK(f.workers.control[0].second.rank == 2);
  CHECK(f.workers.control[0].second.world == 6);
  CHECK(f.workers.control[0].second.step == 120);
  CHECK(f.workers.control[0].second.set == "00000000abc12345");
  CHECK(f.workers.control[1].first == 3);

  f.Answer(2, true);
  CHECK(f.Answers().empty());  // rank 3 still owes its answer
  f.clock.Advance(5ms);
  f.Answer(3, true);
  auto r = f.Answers();
  REQUIRE(r.size() == 1);
  CHECK(r[0].generation == 4);
  CHECK(r[0].error.empty());
  CHECK(r[0].micros == 12000);
  REQUIRE(r[0].workers.size() == 2);
  CHECK(r[0].workers[0].rank == 2);
  CHECK(r[0].workers[0].ok == 1);
  CHECK(r[0].workers[1].rank == 3);
  CHECK(r[0].workers[1].ok == 1);

  // Their lines and ends carry the new generation and rank.
  f.control.OnWorkerLine(3, 1, "step 121");
  auto out = f.link.Of<msg::Output>(MsgType::kOutput);
  REQUIRE(out.size() == 1);
  CHECK(out[0].generation == 4);
  CHECK(out[0].rank == 3);
  f.control.OnWorkerExited(WorkerExit{2, 1004, 0, 0, {}});
  auto exited = f.link.Of<msg::WorkerExited>(MsgType::kWorkerExited);
  REQUIRE(exited.size() == 1);
  CHECK(exited[0].generation == 4);
  CHECK(exited[0].rank == 2);
  CHECK(f.control.phase() == AgentPhase::kRunning);
}

TEST_CASE("AgentControl reshape: a reshaped worker beats with the RANK it was started with; it counts for its new rank") {
  ReshapeFixture f;
  const std::vector<std::string> tokens = f.workers.tokens;  // rank 4's, rank 5's
  f.Deliver(MsgType::kReshape, f.Make({{4, 5}, {5, 4}}));  // swapped
  f.control.OnStepBeat(StepBeat{5, 130, tokens[0], -1, -1});  // claims 5 with rank 4's token: nobody's
  f.control.OnStepBeat(StepBeat{4, 131, tokens[0], -1, -1});  // the first worker, now rank 5
  f.Tick(1s);
  auto p = f.link.Of<msg::Progress>(MsgType::kProgress);
  REQUIRE(p.size() == 1);
  CHECK(p[0].generation == 4);
  REQUIRE(p[0].ranks.size() == 1);
  CHECK(p[0].ranks[0].rank == 5);
  CHECK(p[0].ranks[0].step == 131);
}

TEST_CASE("AgentControl reshape: a worker whose hang was said starts the new generation unjudged, and is said hung "
          "again before any kill") {
  AgentFixture f;
  f.Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
  f.Assign(3, {4, 5}, /*hang_ms=*/1500);
  const std::vector<std::string> tokens = f.workers.tokens;
  f.control.OnStepBeat(StepBeat{4, 10, tokens[0], -1, -1});
  f.Tick(1500ms);
  REQUIRE(f.link.Count(MsgType::kWorkerHung) == 1);
  // Another node is lost before the coordinator stops the generation: it reshapes in place instead.
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
  f.Deliver(MsgType::kReshape, ReshapeFixture::MakeReshape({{4, 2}, {5, 3}}));
  f.snapshots.outgoing.emplace_back(MsgType::kFetched, msg::Fetched{4, 120, "00000000abc12345", 4096, 900, ""}.Encode());
  f.control.OnSnapshotEvents();
  for (int i = 0; i < 5; ++i) {  // 10 s silent, but it has not beaten in generation 4: not judged
    f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
    f.Tick(2s);
  }
  CHECK(f.link.Count(MsgType::kWorkerHung) == 1);
  CHECK(f.workers.signals.empty());
  f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
  f.control.OnStepBeat(StepBeat{4, 121, tokens[0], -1, -1});
  f.Tick(1500ms);
  auto hung = f.link.Of<msg::WorkerHung>(MsgType::kWorkerHung);
  REQUIRE(hung.size() == 2);  // told again, in its new generation and rank; not killed without a word
  CHECK(hung[1].generation == 4);
  CHECK(hung[1].rank == 2);
  CHECK(f.workers.signals.empty());
}

TEST_CASE("AgentControl reshape: a worker already killed for its silence fails its move") {
  AgentFixture f;
  f.Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
  f.Assign(3, {4, 5}, /*hang_ms=*/1500);
  f.control.OnStepBeat(StepBeat{4, 10, f.workers.tokens[0], -1, -1});
  for (int i = 0; i < 9; ++i) {  // said hung, then no stop within the grace: killed
    f.control.OnFrame(Frame{MsgType::kPing, msg::Ping{}.Encode()});
    f.Tick(2s);
  }
  REQUIRE(f.workers.SignalsTo(4) == std::vector<int>{SIGKILL});
  f.Deliver(MsgType::kReshape, ReshapeFixture::MakeReshape({{4, 2}, {5, 3}}));  // before its end arrived
  f.snapshots.outgoing.emplace_back(MsgType::kFetched, msg::Fetched{4, 120, "00000000abc12345", 4096, 900, ""}.Encode());
  f.control.OnSnapshotEvents();
  REQUIRE(f.workers.control.size() == 1);  // only rank 5 is told
  CHECK(f.workers.control[0].first == 3);
  f.control.OnWorkerControl(3, Frame{MsgType::kWorkerReshaped, msg::WorkerReshaped{4, true, "", 30}.Encode()});
  auto r = f.link.Of<msg::Reshaped>(MsgType::kReshaped);
  REQUIRE(r.size() == 1);
  REQUIRE(r[0].workers.size() == 2);
  CHECK(r[0].workers[0].rank == 2);
  CHECK(r[0].workers[0].ok == 0);
  CHECK(r[0].workers[0].why == "was killed for its silence");
  CHECK(r[0].workers[1].ok == 1);
}

TEST_CASE("AgentControl reshape: a worker that does not answer by the deadline is named in the answer") {
  ReshapeFixture f;
  f.Deliver(MsgType::kReshape, f.Make({{4, 4}, {5, 5}}, 2000));  // within the coordinator's 3 s of silence
  f.Fetched();
  f.Answer(4, true);
  f.Tick(1999ms);
  CHECK(f.Answers().empty());
  REQUIRE(f.control.NextDeadline());
  CHECK(*f.control.NextDeadline() <= f.clock.Now() + 1ms);
  f.Tick(1ms);
  auto r = f.Answers();
  REQUIRE(r.size() == 1);
  CHECK(r[0].workers[0].ok == 1);
  CHECK(r[0].workers[1].ok == 0);
  CHECK(r[0].workers[1].why == "did not confirm within 2 s");
  f.Answer(5, true);  // too late: nothing more is sent
  CHECK(f.Answers().size() == 1);
}

TEST_CASE("AgentControl reshape: a save the node cannot gather fails the node, and no worker is told") {
  ReshapeFixture f;
  f.Deliver(MsgType::kReshape, f.Make({{4, 4}, {5, 5}}));
  f.Fetched("shard 2: connection refused by 10.0.0.2:7000");
  CHECK(f.workers.control.empty());
  auto r = f.Answers();
  REQUIRE(r.size() == 1);
  CHECK(r[0].error == "host node7 could not gather step 120: shard 2: connection refused by 10.0.0.2:7000");
}

TEST_CASE("AgentControl reshape: a gather still under way at the deadline is the node's failure") {
  ReshapeFixture f;
  f.Deliver(MsgType::kReshape, f.Make({{4, 4}}, 800));
  f.Tick(800ms);
  auto r = f.Answers();
  REQUIRE(r.size() == 1);
  CHECK(r[0].error == "host node7 could not gather step 120 within 800 ms");
  REQUIRE(r[0].workers.size() == 1);
  CHECK(r[0].workers[0].ok == 0);
}

TEST_CASE("AgentControl reshape: a replacement's Assign waits for the gather, then starts beside the workers") {
  ReshapeFixture f;
  f.Deliver(MsgType::kReshape, f.Make({{5, 5}}));  // rank 4 crashed; 5 stays
  msg::Assign a;
  a.generation = 4;
  a.argv = {"train"};
  a.workers.push_back(msg::WorkerSpec{});
  a.workers[0].rank = 4;
  f.Deliver(MsgType::kAssign, a);
  CHECK(f.workers.added.empty());  // it loads the save the node is still gathering
  f.Fetched();
  REQUIRE(f.workers.added.size() == 1);
  CHECK(f.workers.added[0].workers[0].rank == 4);
  CHECK(f.workers.assigns.size() == 1);   // StartWorkers (which replaces every worker) only for generation 3
  CHECK(f.workers.leftover_sweeps == 1);  // and no sweep of what is running
  auto started = f.link.Of<msg::WorkerStarted>(MsgType::kWorkerStarted);
  REQUIRE(started.size() == 1);
  CHECK(started[0].generation == 4);
  CHECK(started[0].rank == 4);
  f.Answer(5, true);
  REQUIRE(f.Answers().size() == 1);
  // Both are generation 4's now: a Stop waits for both.
  f.Stop(4);
  CHECK(f.workers.SignalsTo(4) == std::vector<int>{SIGTERM});
  CHECK(f.workers.SignalsTo(5) == std::vector<int>{SIGTERM});
}

TEST_CASE("AgentControl reshape: an idle standby gathers, answers, and starts the ranks it takes") {
  AgentFixture f;
  f.Deliver(MsgType::kSnapshotSetup, msg::SnapshotSetup{});
  msg::Reshape r;
  r.generation = 2;
  r.step = 40;
  r.id = msg::SnapshotId{"feed0001", 2, 0, "c0", "00000000abc12345"};
  r.world = 2;
  r.deadline_ms = 5000;
  f.Deliver(MsgType::kReshape, r);
  f.Assign(2, {1});
  CHECK(f.workers.added.empty());
  CHECK(f.workers.assigns.empty());
  f.snapshots.outgoing.emplace_back(MsgType::kFetched, msg::Fetched{2, 40, "00000000abc12345", 0, 0, ""}.Encode());
  f.control.OnSnapshotEvents();
  auto answers = f.link.Of<msg::Reshaped>(MsgType::kReshaped);
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].error.empty());
  CHECK(answers[0].workers.empty());
  REQUIRE(f.workers.added.size() == 1);
  CHECK(f.link.Of<msg::WorkerStarted>(MsgType::kWorkerStarted).at(0).rank == 1);
  CHECK(f.control.phase() == AgentPhase::kRunning);
}

TEST_CASE("AgentControl reshape: a worker moved to rank -1 is stopped, and one that ends meanwhile fails its move") {
  ReshapeFixture f;
  f.Deliver(MsgType::kReshape, f.Make({{4, -1}, {5, 0}}));
  REQUIRE(f.workers.renumbered.size() == 1);
  CHECK(f.workers.renumbered[0][0].new_rank == -1);  // the launcher SIGKILLs it
  f.control.OnWorkerExited(WorkerExit{-1, 1004, 0, SIGKILL, {}});
  CHECK(f.link.Count(MsgType::kWorkerExited) == 0);  // not in the new world: nobody's concern
  f.Fetched();
  REQUIRE(f.workers.control.size() == 1);
  f.control.OnWorkerExited(WorkerExit{0, 1005, 1, 0, {}});
  auto r = f.Answers();
  REQUIRE(r.size() == 1);
  CHECK(r[0].workers[0].rank == -1);
  CHECK(r[0].workers[0].ok == 1);
  CHECK(r[0].workers[1].ok == 0);
  CHECK(r[0].workers[1].why == "exited with code 1");
  auto exited = f.link.Of<msg::WorkerExited>(MsgType::kWorkerExited);
  REQUIRE(exited.size() == 1);
  CHECK(exited[0].generation == 4);
  CHECK(exited[0].rank == 0);
}

TEST_CASE("AgentControl reshape: a worker that had finished training and exits 0 has nothing to confirm") {
  ReshapeFixture f;
  f.Deliver(MsgType::kReshape, f.Make({{4, 4}, {5, 5}}));
  f.Fetched();
  f.control.OnWorkerExited(WorkerExit{4, 1004, 0, 0, {}});
  f.Answer(5, true);
  auto r = f.Answers();
  REQUIRE(r.size() == 1);
  CHECK(r[0].workers[0].ok == 1);
  CHECK(r[0].workers[1].ok == 1);
}

TEST_CASE("AgentControl reshape: a worker without a control channel, or a worker's refusal, fails its move") {
  ReshapeFixture f;
  f.workers.control_errors[4] = "it has no control channel";
  f.Deliver(MsgType::kReshape, f.Make({{4, 4}, {5, 5}}));
  f.Fetched();
  f.Answer(5, false, "snapshot step 120 is not in /dev/shm/snap");
  auto r = f.Answers();
  REQUIRE(r.size() == 1);
  CHECK(r[0].workers[0].why == "could not be told: it has no control channel");
  CHECK(r[0].workers[1].why == "refused: snapshot step 120 is not in /dev/shm/snap");
}

TEST_CASE("AgentControl reshape: after a refusal, the coordinator's Stop of the next generation stops the workers") {
  AgentFixture f;
  f.Assign(3, {0});
  msg::Reshape r;
  r.generation = 4;
  r.id = msg::SnapshotId{"feed0001", 1, 0, "c0", "00000000abc12345"};
  r.moves = {{0, 0}};
  f.Deliver(MsgType::kReshape, r);  // snapshots off: refused
  f.Stop(4);
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  f.Exit(0, 0, SIGTERM);
  auto stopped = f.link.Of<msg::Stopped>(MsgType::kStopped);
  REQUIRE(stopped.size() == 1);
  CHECK(stopped[0].generation == 4);
}

TEST_CASE("AgentControl reshape: refused at once without snapshots, or while stopping") {
  AgentFixture f;
  f.Assign(3, {0});
  msg::Reshape r;
  r.generation = 4;
  r.id = msg::SnapshotId{"feed0001", 1, 0, "c0", "00000000abc12345"};
  r.moves = {{0, 0}};
  f.Deliver(MsgType::kReshape, r);
  auto a = f.link.Of<msg::Reshaped>(MsgType::kReshaped);
  REQUIRE(a.size() == 1);
  CHECK(a[0].error == "host node7: snapshots are off on this node");
  CHECK(f.workers.renumbered.empty());
  CHECK(f.control.generation() == 3);
  f.Stop(3);
  f.Deliver(MsgType::kReshape, r);
  a = f.link.Of<msg::Reshaped>(MsgType::kReshaped);
  REQUIRE(a.size() == 2);
  CHECK(a[1].error == "host node7: the node is stopping");
}

}  // namespace
}  // namespace ds
