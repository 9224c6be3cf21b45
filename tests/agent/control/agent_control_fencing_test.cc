// AgentControl's fencing (wire_format.md "Fencing") on fakes and a fake
// clock: a frame inside Fenced is admitted at the newest token seen or
// above; a deposed leader's frame (an older token, or a bare one once a
// token was seen), replayed as it was sent, commands nothing and does not
// count as the coordinator heard, so the agent still finds its coordinator
// silent; a newer leader's token is admitted from then on.
#include <signal.h>

#include <catch2/catch.hpp>

#include "agent/control/agent_control.h"
#include "tests/agent/control/fake_agent_seams.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
using testing::AgentFixture;
using wire::MsgType;

template <class M>
Frame FencedFrame(uint64_t token, MsgType type, const M& m) {
  return Frame{MsgType::kFenced, msg::Fenced{token, static_cast<uint32_t>(type), m.Encode()}.Encode()};
}

msg::Assign Generation(uint32_t gen, int rank) {
  msg::Assign a;
  a.generation = gen;
  a.argv = {"train"};
  a.stop_grace_ms = 1000;
  msg::WorkerSpec w;
  w.rank = rank;
  a.workers.push_back(w);
  return a;
}

TEST_CASE("AgentControl fencing: a frame replayed from a deposed leader commands nothing; the newer leader's does") {
  AgentFixture f;
  f.control.OnFrame(FencedFrame(5, MsgType::kAssign, Generation(0, 0)));
  REQUIRE(f.workers.assigns.size() == 1);
  const Frame old_stop = FencedFrame(5, MsgType::kStop, msg::Stop{0});  // what leader 5 would send
  f.control.OnFrame(FencedFrame(7, MsgType::kPing, msg::Ping{}));       // leader 7 takes over
  f.control.OnFrame(old_stop);                                          // leader 5's frame, replayed
  CHECK(f.workers.signals.empty());
  CHECK(f.control.phase() == AgentPhase::kRunning);
  f.control.OnFrame(Frame{MsgType::kStop, msg::Stop{0}.Encode()});  // bare: as if no fencing, refused too
  CHECK(f.workers.signals.empty());
  f.control.OnFrame(FencedFrame(7, MsgType::kStop, msg::Stop{0}));
  CHECK(f.workers.SignalsTo(0) == std::vector<int>{SIGTERM});
  CHECK(f.control.phase() == AgentPhase::kStopping);
}

TEST_CASE("AgentControl fencing: a deposed leader's Pings do not keep its link alive") {
  AgentFixture f;
  f.control.OnFrame(FencedFrame(7, MsgType::kAssign, Generation(0, 0)));
  for (int i = 0; i < 4; ++i) {  // 4 s of Pings from leader 5 only: the agent hears nobody
    f.control.OnFrame(FencedFrame(5, MsgType::kPing, msg::Ping{}));
    f.Tick(1s);
  }
  CHECK(f.control.phase() == AgentPhase::kQuitting);  // lost its coordinator (3 s): kills its workers
  REQUIRE_FALSE(f.workers.SignalsTo(0).empty());
  CHECK(f.workers.SignalsTo(0).front() == SIGTERM);
}

TEST_CASE("AgentControl fencing: bare frames are admitted while no token was seen, and a Fenced inside a Fenced "
          "ends the link") {
  AgentFixture f;
  f.Assign(0, {0});  // bare, as a job without coordinator: sends
  REQUIRE(f.workers.assigns.size() == 1);
  f.control.OnFrame(FencedFrame(3, MsgType::kPing, msg::Ping{}));
  CHECK(f.link.open());
  const msg::Fenced inner{3, static_cast<uint32_t>(MsgType::kPing), msg::Ping{}.Encode()};
  f.control.OnFrame(FencedFrame(3, MsgType::kFenced, inner));
  CHECK_FALSE(f.link.open());
}

}  // namespace
}  // namespace ds
