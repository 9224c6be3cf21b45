// The control channel with a real worker process (fake_control_worker):
// ProcessLauncher passes the worker's end at DSLAUNCH_CONTROL_FD and
// nothing else, a WorkerReshape after Renumber reaches the renumbered worker
// (same pid), its WorkerReshaped comes back through OnControlReadable; a
// worker whose Assign does not ask for one has none. Plus the framing on a bare pair.
#include "agent/workers/control_channel.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <catch2/catch.hpp>

#include "agent/process_launcher.h"
#include "wire/protocol.h"

namespace ds {
namespace {

TEST_CASE("control channel: one frame per packet; garbage and the peer's end are errors") {
  auto pair = OpenControlPair();
  REQUIRE(pair.ok());
  auto& [agent, worker] = *pair;
  auto none = ReadControlFrame(agent.get());
  REQUIRE(none.ok());
  CHECK_FALSE(*none);
  REQUIRE(SendControlFrame(worker.get(), wire::MsgType::kWorkerReshaped, msg::WorkerReshaped{7, 1, "", 5}.Encode()).ok());
  auto f = ReadControlFrame(agent.get());
  REQUIRE(f.ok());
  REQUIRE(*f);
  CHECK((*f)->type == wire::MsgType::kWorkerReshaped);
  CHECK(msg::WorkerReshaped::Decode((*f)->payload)->generation == 7);
  const char junk[20] = "not a frame at all!";
  REQUIRE(::send(worker.get(), junk, sizeof(junk), 0) == sizeof(junk));
  CHECK_FALSE(ReadControlFrame(agent.get()).ok());
  worker.Reset();
  auto end = ReadControlFrame(agent.get());
  REQUIRE_FALSE(end.ok());
  CHECK(end.status().message() == "control channel closed by the worker");
  CHECK_FALSE(SendControlFrame(agent.get(), wire::MsgType::kWorkerReshape, msg::WorkerReshape{}.Encode()).ok());
}

// Polls the launcher's control fds until `sink` got a frame (10 s at most).
std::vector<std::pair<int, Frame>> AwaitControl(ProcessLauncher& pl) {
  std::vector<std::pair<int, Frame>> got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got.empty() && std::chrono::steady_clock::now() < until) {
    std::vector<pollfd> fds;
    pl.AddControlFds(&fds);
    REQUIRE(!fds.empty());
    REQUIRE(::poll(fds.data(), fds.size(), 1000) >= 0);
    for (const pollfd& p : fds)
      if (p.revents) pl.OnControlReadable(p.fd, [&](int rank, const Frame& f) { got.emplace_back(rank, f); });
  }
  return got;
}

TEST_CASE("control channel: a worker keeps its pid across Renumber and answers WorkerReshape", "[worker]") {
  ChildAgents tree;
  ProcessLauncher pl("testhost", false, tree);
  msg::Assign a;
  a.generation = 2;
  a.argv = {FAKE_CONTROL_WORKER};
  a.workers.push_back(msg::WorkerSpec{});
  a.workers[0].rank = 1;
  a.workers[0].env = {{"DSLAUNCH_CONTROL_FD", "9"}};  // asked for; the number is the agent's
  auto started = pl.StartWorkers(a, {std::string(32, 'a')}, "");
  REQUIRE(started.size() == 1);
  REQUIRE(started[0].pid > 0);
  CHECK(pl.SendControl(0, msg::WorkerReshape{}).message() == "it is not running on this node");

  pl.Renumber({{1, 0}});
  REQUIRE(pl.SendControl(0, msg::WorkerReshape{3, 0, 1, 40, "s1"}).ok());
  auto got = AwaitControl(pl);
  REQUIRE(got.size() == 1);
  CHECK(got[0].first == 0);
  auto answer = msg::WorkerReshaped::Decode(got[0].second.payload);
  REQUIRE(answer.ok());
  CHECK(answer->generation == 3);
  CHECK(answer->ok == 1);
  CHECK(answer->micros == 17);

  REQUIRE(pl.SendControl(0, msg::WorkerReshape{4, 0, 1, 40, "refuse"}).ok());
  got = AwaitControl(pl);
  REQUIRE(got.size() == 1);
  CHECK(msg::WorkerReshaped::Decode(got[0].second.payload)->why == "refused as asked");

  // What the worker saw, and its end: it exits 0 when the channel closes, which
  // a group SIGKILL would not give; here the launcher's SIGTERM ends it.
  pl.SignalGroup(0, SIGTERM);
  int status = 0;
  REQUIRE(::waitpid(started[0].pid, &status, 0) == started[0].pid);
  std::vector<std::pair<int, std::string>> lines;
  auto e = pl.OnReaped(started[0].pid, status, [&](int rank, int stream, const std::string& l) {
    lines.emplace_back(rank, l);
    (void)stream;
  });
  REQUIRE(e);
  CHECK(e->rank == 0);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].second == "control fd 3, fd 4 closed");
  CHECK(lines[1].second == "reshape to generation 3 rank 0 of 1 at step 40");
  CHECK(lines[2].second == "reshape to generation 4 rank 0 of 1 at step 40");
}

TEST_CASE("control channel: only for a worker whose Assign asks for one", "[worker]") {
  ChildAgents tree;
  ProcessLauncher pl("testhost", false, tree);
  msg::Assign a;
  a.generation = 0;
  a.argv = {FAKE_CONTROL_WORKER};  // without DSLAUNCH_CONTROL_FD it exits 3 at once
  a.workers.push_back(msg::WorkerSpec{});
  auto started = pl.StartWorkers(a, {std::string(32, 'a')}, "");
  REQUIRE(started.at(0).pid > 0);
  std::vector<pollfd> fds;
  pl.AddControlFds(&fds);
  CHECK(fds.empty());
  CHECK(pl.SendControl(0, msg::WorkerReshape{}).message() == "it has no control channel");
  int status = 0;
  REQUIRE(::waitpid(started[0].pid, &status, 0) == started[0].pid);
  CHECK(WEXITSTATUS(status) == 3);
  pl.OnReaped(started[0].pid, status, [](int, int, const std::string&) {});
}

}  // namespace
}  // namespace ds
