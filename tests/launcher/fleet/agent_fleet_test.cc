// AgentFleet against the FakeSpawner and a coordinator that never listens:
// agents that cannot start or that end before registering fail the job,
// naming the host; each start hands the agents a fresh token, never the job
// secret; at the end the fleet terminates agents that do not exit by
// themselves and stops the io_context. The spawner runs on a thread of its
// own while the io loop goes on. In-process only: no sockets.
#include <catch2/catch.hpp>
#include <signal.h>

#include <future>
#include <stdexcept>
#include <thread>

#include "launcher/config/hostfile.h"
#include "launcher/config/selection.h"
#include "launcher/fleet/agent_fleet.h"
#include "tests/launcher/spawn/fake_spawner.h"

namespace ds {
namespace {

struct Fleet {
  // `custom` (when given, outliving the fixture) starts the agents instead of `spawner`.
  explicit Fleet(int hosts = 2, FleetTree tree = {}, Spawner* custom = nullptr) {
    std::string text;
    for (int i = 0; i < hosts; ++i) text += "w" + std::to_string(i) + " slots=1\n";
    Hostfile hf = ParseHostfile(text, "hostfile").value();
    plan = MakePlan(SelectHosts(hf, SelectionOptions{}).value(), JobSpec{}, /*use_gpus=*/false).value();
    CoordinatorOptions o;
    o.job_id = "job";
    o.secret = "the-job-secret";
    o.argv = {"/bin/true"};
    coord = std::make_unique<Coordinator>(io, plan, o, record);
    std::vector<AgentSpec> specs;
    for (int i = 0; i < hosts; ++i) {
      AgentSpec s;
      s.host = "w" + std::to_string(i);
      s.node_index = i;
      s.argv = {"dsagent"};
      specs.push_back(s);
    }
    FleetOptions options;
    options.notice = [this](const std::string& text) { notices.push_back(text); };
    options.tree = std::move(tree);
    options.rejoin = true;
    options.first_rejoin_delay = std::chrono::milliseconds(1);
    fleet = std::make_unique<AgentFleet>(io, *coord, custom ? *custom : spawner, specs, std::move(options));
    coord->OnDone([this] { fleet->Drain(std::chrono::milliseconds(50)); });
    coord->Start(*fleet);
  }
  // Start() returns before the spawner does: runs the io_context until the
  // handles are back (bounded: never hangs).
  void StartAndWait() {
    fleet->Start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!fleet->started() && std::chrono::steady_clock::now() < deadline)
      io.run_one_for(std::chrono::milliseconds(100));
    REQUIRE(fleet->started());
  }
  // Runs the io_context until the spawner has started `n` agents in all
  // (bounded: never hangs).
  void RunUntilStarted(size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (spawner.started().size() < n && std::chrono::steady_clock::now() < deadline)
      io.run_one_for(std::chrono::milliseconds(20));
  }
  // Runs the io_context until the fleet stops it (bounded: never hangs), then
  // destroys the fleet, which waits until its reaper has ended every handle.
  void RunToEnd() {
    io.run_for(std::chrono::seconds(10));
    fleet.reset();
  }

  asio::io_context io;
  LaunchPlan plan;
  JobRecord record;
  FakeSpawner spawner;
  std::unique_ptr<Coordinator> coord;
  std::unique_ptr<AgentFleet> fleet;
  std::vector<std::string> notices;
};

TEST_CASE("agent fleet: every agent gets a fresh token of its own node on stdin, never the job secret", "[fleet]") {
  Fleet f;
  f.StartAndWait();
  REQUIRE(f.spawner.started().size() == 2);
  const std::string token = f.spawner.started()[0].stdin_payload;
  CHECK(token.size() == 64);
  CHECK(token != "the-job-secret");
  CHECK(f.spawner.started()[1].stdin_payload.size() == 64);
  CHECK(f.spawner.started()[1].stdin_payload != token);  // one node's key never opens another's
  CHECK(f.coord->state() == CoordState::kWaitingForAgents);
}

TEST_CASE("agent fleet: a step launcher's agents share one fresh token (one stdin for the whole run)", "[fleet]") {
  Fleet f;
  f.spawner.ShareOnePayload();
  f.StartAndWait();
  REQUIRE(f.spawner.started().size() == 2);
  CHECK(f.spawner.started()[0].stdin_payload.size() == 64);
  CHECK(f.spawner.started()[1].stdin_payload == f.spawner.started()[0].stdin_payload);
}

TEST_CASE("agent fleet: Start returns while the spawner still works; the io loop goes on meanwhile",
          "[fleet]") {
  Fleet f;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  f.spawner.BeforeStart([released] { released.wait(); });
  f.fleet->Start();  // returns although the spawner is held
  bool ran = false;
  asio::post(f.io, [&ran] { ran = true; });
  f.io.poll();
  CHECK(ran);  // the coordinator's loop serves while agents are being started
  CHECK_FALSE(f.fleet->started());
  release.set_value();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!f.fleet->started() && std::chrono::steady_clock::now() < deadline)
    f.io.run_one_for(std::chrono::milliseconds(100));
  CHECK(f.fleet->started());
  CHECK(f.spawner.started().size() == 2);
}

TEST_CASE("agent fleet: agents that start after the job ended are terminated", "[fleet]") {
  Fleet f;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  f.spawner.BeforeStart([released] { released.wait(); });
  f.fleet->Start();
  f.coord->RequestStop(SIGINT);  // the job ends (Ctrl-C) before any agent is started
  f.io.run_for(std::chrono::seconds(10));  // nothing running yet: the drain stops the loop at once
  CHECK(f.io.stopped());
  release.set_value();
  f.fleet.reset();               // joins the start thread; the late handles terminate their agents
  CHECK(f.spawner.Terminated(0));
  CHECK(f.spawner.Terminated(1));
}

TEST_CASE("agent fleet: a host whose agent cannot start aborts the job, naming it", "[fleet]") {
  Fleet f;
  f.spawner.FailHost("w1", Status::Unavailable("w1: connection refused"));
  f.StartAndWait();
  CHECK(f.coord->state() == CoordState::kDone);
  REQUIRE(f.record.first_failure());
  CHECK(f.record.first_failure()->host == "w1");
  CHECK(f.record.first_failure()->what == "w1: connection refused");
  f.RunToEnd();  // the drain terminates w0's agent, which does not exit by itself
  CHECK(f.spawner.Terminated(0));
}

TEST_CASE("agent fleet: an agent that exits before registering aborts the job", "[fleet]") {
  Fleet f;
  f.StartAndWait();
  f.spawner.End(1, 3);
  f.RunToEnd();
  CHECK(f.coord->state() == CoordState::kDone);
  REQUIRE(f.record.first_failure());
  CHECK(f.record.first_failure()->host == "w1");
  CHECK(f.record.first_failure()->what == "dsagent exited with status 3 before registering");
  CHECK(f.record.ExitCode() == 1);
  CHECK(f.spawner.Terminated(0));
}

TEST_CASE("agent fleet: a spawner that throws fails the job naming the host and why; the exception stays on its thread",
          "[fleet]") {
  Fleet f;
  f.spawner.BeforeStart([] { throw std::runtime_error("out of threads"); });
  f.StartAndWait();
  CHECK(f.coord->state() == CoordState::kDone);
  REQUIRE(f.record.first_failure());
  CHECK(f.record.first_failure()->host == "w0");
  CHECK(f.record.first_failure()->what == "w0: starting its agent failed: out of threads");
  CHECK(f.record.ExitCode() == 1);
}

TEST_CASE("agent fleet: a lost node's agent does not hold the drain, and is still terminated", "[fleet]") {
  Fleet f;
  f.StartAndWait();
  f.fleet->OnAgentLost(1);  // its handle still says running (a step launcher that has not noticed)
  f.spawner.End(0, 0);
  f.fleet->Drain(std::chrono::hours(1));
  f.RunToEnd();
  CHECK(f.io.stopped());  // at once, not after the hour
  CHECK(f.spawner.Terminated(1));
}

// Delegates to a FakeSpawner, except that the first agent it starts on
// `held_host` ends only when released: its Terminate() blocks as an SSH
// handle's does on a dark session. Called on `io_thread` (the test's, the
// coordinator's in dslaunch) it returns at once instead, so that the test
// fails rather than hangs; it records the thread it ran on either way.
class HoldingSpawner final : public Spawner {
 public:
  explicit HoldingSpawner(std::string held_host) : held_host_(std::move(held_host)) {}
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override {
    auto out = inner.Start(specs);
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].host == held_host_ && out[i].ok() && !held_given_) {
        held_given_ = true;
        out[i] = std::unique_ptr<AgentHandle>(std::make_unique<Held>(std::move(out[i]).value(), *this));
      }
    return out;
  }
  // Ready once the held agent's Terminate() has begun.
  std::shared_future<void> entered() const { return entered_future_; }
  std::thread::id terminated_on() const { return terminated_on_; }  // after entered()
  void Release() { release_.set_value(); }

  FakeSpawner inner;

 private:
  class Held final : public AgentHandle {
   public:
    Held(std::unique_ptr<AgentHandle> h, HoldingSpawner& s) : h_(std::move(h)), s_(s) {}
    ~Held() override { Terminate(); }
    bool Running() override { return h_->Running(); }
    void Terminate() override {
      if (ended_) return;
      ended_ = true;
      s_.terminated_on_ = std::this_thread::get_id();
      s_.entered_.set_value();
      if (std::this_thread::get_id() != s_.io_thread_) s_.released_.wait();
      h_->Terminate();
    }
    int ExitStatus() override { return h_->ExitStatus(); }
    int exit_fd() const override { return h_->exit_fd(); }

   private:
    std::unique_ptr<AgentHandle> h_;
    HoldingSpawner& s_;
    bool ended_ = false;
  };

  std::string held_host_;
  bool held_given_ = false;
  std::thread::id io_thread_ = std::this_thread::get_id();
  std::thread::id terminated_on_;
  std::promise<void> entered_;
  std::shared_future<void> entered_future_ = entered_.get_future().share();
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
};

TEST_CASE("agent fleet: taking a lost node back ends its old agent off the io thread, which goes on meanwhile",
          "[fleet]") {
  HoldingSpawner holding("w1");
  Fleet f(2, {}, &holding);
  f.StartAndWait();
  f.fleet->OnAgentRegistered(0);
  f.fleet->OnAgentRegistered(1);
  f.fleet->OnAgentLost(1);  // with rejoin: a new agent for w1 after 1 ms replaces the old one
  std::shared_future<void> entered = holding.entered();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (entered.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
         std::chrono::steady_clock::now() < deadline)
    f.io.run_one_for(std::chrono::milliseconds(20));
  REQUIRE(entered.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  // w0, w1, then w1's new agent; more of them when the reaper's thread is
  // slow to begin (a loaded machine: the io thread went on taking w1 back).
  const std::vector<AgentSpec> started = holding.inner.started();
  REQUIRE(started.size() >= 3);
  CHECK(started[0].host == "w0");
  for (size_t i = 1; i < started.size(); ++i) CHECK(started[i].host == "w1");
  CHECK(holding.terminated_on() != std::this_thread::get_id());  // the reaper's thread, not the io thread
  bool ran = false;
  asio::post(f.io, [&ran] { ran = true; });
  f.io.poll();
  CHECK(ran);  // while the old agent's Terminate still blocks
  holding.Release();
  f.fleet.reset();  // waits for the reaper
  CHECK(holding.inner.Terminated(1));
}

TEST_CASE("agent fleet: a new agent that never registers is replaced after a doubling wait, not every first delay",
          "[fleet]") {
  Fleet f(2);
  f.StartAndWait();
  f.fleet->OnAgentRegistered(0);
  f.fleet->OnAgentRegistered(1);
  f.fleet->OnAgentLost(1);  // its replacements start, but none registers
  std::vector<std::chrono::steady_clock::time_point> at;
  for (size_t n = 3; n <= 8; ++n) {
    f.RunUntilStarted(n);
    REQUIRE(f.spawner.started().size() >= n);
    at.push_back(std::chrono::steady_clock::now());
  }
  // Waits of 2, 4, 8, 16 and 32 ms after the first replacement (1 ms, doubling):
  // lower bounds, which a loaded machine only lengthens. Before, each came 1 ms
  // after the last, for the rest of the job.
  CHECK(at.back() - at.front() >= std::chrono::milliseconds(50));
  CHECK(at[5] - at[4] >= std::chrono::milliseconds(16));
  for (size_t i = 1; i < f.spawner.started().size(); ++i) CHECK(f.spawner.started()[i].host == "w1");
  f.fleet.reset();
}

FleetTree Tree(int width, std::chrono::milliseconds handoff) {
  FleetTree t;
  t.width = width;
  t.handoff_timeout = handoff;
  t.command = [](const AgentSpec& child, int parent) {
    return std::vector<std::string>{"ssh", child.host, "dsagent --tree-parent " + std::to_string(parent)};
  };
  return t;
}

std::vector<std::string> Hosts(const std::vector<AgentSpec>& specs) {
  std::vector<std::string> out;
  for (const AgentSpec& s : specs) out.push_back(s.host);
  return out;
}

TEST_CASE("agent fleet, tree: the spawner starts only the roots", "[fleet][tree]") {
  Fleet f(7, Tree(2, std::chrono::hours(1)));
  f.StartAndWait();
  CHECK(Hosts(f.spawner.started()) == std::vector<std::string>{"w0", "w1"});
  f.fleet->OnAgentRegistered(0);  // hands w2 and w3 to w0's agent: nothing more for the spawner
  f.io.poll();
  CHECK(f.spawner.started().size() == 2);
  CHECK(f.notices.empty());
}

TEST_CASE("agent fleet, tree: a child its parent could not start is started from here, with a token of its own",
          "[fleet][tree]") {
  Fleet f(7, Tree(2, std::chrono::hours(1)));
  f.StartAndWait();
  const std::string first_token = f.spawner.started()[0].stdin_payload;
  f.fleet->OnAgentRegistered(0);
  f.fleet->OnAgentEnded(1, msg::AgentEnded{2, 255, 0, "not yours"});  // not w1's child: ignored
  f.fleet->OnAgentEnded(0, msg::AgentEnded{2, 255, 0, "ssh: connect to host w2 port 22: Connection refused"});
  f.fleet->OnAgentEnded(0, msg::AgentEnded{2, 255, 0, "again"});      // already the launcher's
  f.RunUntilStarted(3);
  f.io.poll();
  REQUIRE(Hosts(f.spawner.started()) == std::vector<std::string>{"w0", "w1", "w2"});
  const std::string token = f.spawner.started()[2].stdin_payload;
  CHECK(token.size() == 64);
  CHECK(token != first_token);
  REQUIRE(f.notices.size() == 1);
  CHECK(f.notices[0] == "w2: w0 could not start it (status 255: ssh: connect to host w2 port 22: Connection "
                        "refused); starting it from here");
  CHECK(f.coord->state() == CoordState::kWaitingForAgents);  // a retry, not a failure
}

TEST_CASE("agent fleet, tree: children not registered by the hand-off deadline are started from here",
          "[fleet][tree]") {
  Fleet f(7, Tree(2, std::chrono::milliseconds(50)));
  f.StartAndWait();
  f.fleet->OnAgentRegistered(1);  // w1's agent never starts w4 and w5 (hung, or its ssh does)
  f.RunUntilStarted(4);
  CHECK(Hosts(f.spawner.started()) == std::vector<std::string>{"w0", "w1", "w4", "w5"});
  REQUIRE(f.notices.size() == 2);
  CHECK(f.notices[0] == "w4: not registered 50ms after its parent was told to start it; starting it from here");
}

TEST_CASE("agent fleet, tree: a child the launcher cannot start either fails the job, naming it", "[fleet][tree]") {
  Fleet f(7, Tree(2, std::chrono::hours(1)));
  f.StartAndWait();
  f.spawner.FailHost("w3", Status::Unavailable("w3: connection refused"));
  f.fleet->OnAgentRegistered(0);
  f.fleet->OnAgentEnded(0, msg::AgentEnded{3, 255, 0, "ssh: connect to host w3 port 22: Connection refused"});
  f.RunToEnd();
  CHECK(f.coord->state() == CoordState::kDone);
  REQUIRE(f.record.first_failure());
  CHECK(f.record.first_failure()->host == "w3");
  CHECK(f.record.first_failure()->what == "w3: connection refused");
}

}  // namespace
}  // namespace ds
