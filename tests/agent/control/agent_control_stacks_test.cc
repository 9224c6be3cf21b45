// AgentControl and DumpStacks (agent_control.cc, stack_dump.h): the running
// workers of the asked generation go to the StackDumps seam with the
// request's budget, its answer goes up as Stacks; a stale generation's
// request is ignored; without the seam (dssim) the answer comes at once,
// every rank without a stack.
#include <catch2/catch.hpp>

#include "tests/agent/control/fake_agent_seams.h"

namespace ds {
namespace {

using testing::FakeLink;
using testing::FakeSnapshots;
using testing::FakeTree;
using testing::FakeWorkers;
using wire::MsgType;

struct FakeStacks final : StackDumps {
  void Start(uint32_t generation, std::vector<StackTarget> t, std::chrono::milliseconds budget) override {
    calls.push_back({generation, std::move(t), budget});
  }
  struct Call {
    uint32_t generation;
    std::vector<StackTarget> targets;
    std::chrono::milliseconds budget;
  };
  std::vector<Call> calls;
};

struct Fixture {
  FakeClock clock;
  FakeLink link;
  FakeWorkers workers;
  FakeSnapshots snapshots;
  FakeTree tree;
  FakeStacks stacks;
  AgentControl control{AgentControlOptions{"node7", 1.0, 3.0}, AgentSeams{link, workers, snapshots, tree, &stacks},
                       clock};
  void Assign(uint32_t gen) {
    msg::Assign a;
    a.generation = gen;
    a.argv = {"train"};
    a.stop_grace_ms = 1000;
    for (int r : {4, 5}) {
      msg::WorkerSpec w;
      w.rank = r;
      a.workers.push_back(w);
    }
    control.OnFrame(Frame{MsgType::kAssign, a.Encode()});
  }
};

TEST_CASE("AgentControl: DumpStacks hands the running workers to the dumper, its answer goes up") {
  Fixture f;
  f.Assign(3);
  f.control.OnWorkerExited(WorkerExit{5, 1005, 0, 0, {}});  // ended: nothing to dump
  f.control.OnFrame(Frame{MsgType::kDumpStacks, msg::DumpStacks{2, 7500}.Encode()});  // stale
  CHECK(f.stacks.calls.empty());
  f.control.OnFrame(Frame{MsgType::kDumpStacks, msg::DumpStacks{3, 7500}.Encode()});
  REQUIRE(f.stacks.calls.size() == 1);
  CHECK(f.stacks.calls[0].generation == 3);
  REQUIRE(f.stacks.calls[0].targets.size() == 1);
  CHECK(f.stacks.calls[0].targets[0].rank == 4);
  CHECK(f.stacks.calls[0].targets[0].pid == 1004);
  CHECK(f.stacks.calls[0].budget == std::chrono::milliseconds(7500));
  f.control.OnStacksTaken(msg::Stacks{3, {{4, 1004, "eu-stack", "#0 x"}}});
  f.control.OnStacksTaken(msg::Stacks{2, {}});  // an older generation's: dropped
  auto sent = f.link.Of<msg::Stacks>(MsgType::kStacks);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].ranks.at(0).text == "#0 x");
}

TEST_CASE("AgentControl: without a dumper DumpStacks is answered at once, no rank with a stack") {
  testing::AgentFixture f;
  f.Assign(1, {0, 1});
  f.Deliver(MsgType::kDumpStacks, msg::DumpStacks{1, 1000});
  auto sent = f.link.Of<msg::Stacks>(MsgType::kStacks);
  REQUIRE(sent.size() == 1);
  REQUIRE(sent[0].ranks.size() == 2);
  CHECK(sent[0].ranks[1].rank == 1);
  CHECK(sent[0].ranks[1].tool.empty());
  CHECK(sent[0].ranks[1].text == "this agent takes no stacks");
}

}  // namespace
}  // namespace ds
