// Fakes of AgentControl's seams (agent/control/seams.h) for unit tests: they
// record what the control asked for and answer as the test sets them up.
// AgentFixture wires them to an AgentControl on a FakeClock. No sockets,
// processes or sleeps. Single-threaded.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/control/agent_control.h"
#include "common/clock.h"

namespace ds::testing {

class FakeLink final : public CoordinatorLink {
 public:
  void Send(wire::MsgType type, const Bytes& payload) override {
    if (open_) sent.emplace_back(type, payload);
  }
  void Close() override { open_ = false; }
  bool open() const override { return open_; }
  // Reconnect: counted, the address kept; opens the link again while `leader_up`.
  bool Reconnect(const std::string& address) override {
    ++reconnects;
    tried.push_back(address);
    if (leader_up) open_ = true;
    return leader_up;
  }

  // The payloads of every frame of `type` sent, decoded as M.
  template <typename M>
  std::vector<M> Of(wire::MsgType type) const {
    std::vector<M> out;
    for (const auto& [t, p] : sent)
      if (t == type) out.push_back(M::Decode(p).value());
    return out;
  }
  size_t Count(wire::MsgType type) const {
    size_t n = 0;
    for (const auto& f : sent) n += f.first == type;
    return n;
  }
  std::vector<wire::MsgType> Types() const {
    std::vector<wire::MsgType> out;
    for (const auto& f : sent) out.push_back(f.first);
    return out;
  }

  std::vector<std::pair<wire::MsgType, Bytes>> sent;
  bool leader_up = false;
  int reconnects = 0;
  std::vector<std::string> tried;

 private:
  bool open_ = true;
};

class FakeWorkers final : public WorkerLauncher {
 public:
  Result<uint32_t> HoldPort(uint32_t port) override {
    if (!hold_error.empty()) return Status::Unavailable(hold_error);
    held = port == 0 ? 29500 : port;
    return held;
  }
  void ReleasePort() override { held = 0; }
  std::vector<WorkerStart> StartWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                        const std::string& snapshot_dir) override {
    assigns.push_back(m);
    tokens = beat_tokens;
    last_snapshot_dir = snapshot_dir;
    port_at_start = held;
    held = 0;
    std::vector<WorkerStart> out;
    for (const auto& w : m.workers) {
      auto it = start_errors.find(w.rank);
      if (it != start_errors.end()) out.push_back({-1, it->second});
      else out.push_back({1000 + w.rank, ""});
    }
    return out;
  }
  std::vector<WorkerStart> AddWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                      const std::string& snapshot_dir) override {
    added.push_back(m);
    std::vector<WorkerStart> out;
    for (const auto& w : m.workers) out.push_back({1000 + w.rank, ""});
    (void)beat_tokens, (void)snapshot_dir;
    return out;
  }
  void Renumber(const std::vector<msg::RankMove>& moves) override { renumbered.push_back(moves); }
  Status SendControl(int rank, const msg::WorkerReshape& m) override {
    auto it = control_errors.find(rank);
    if (it != control_errors.end()) return Status::Unavailable(it->second);
    control.emplace_back(rank, m);
    return Status::OK();
  }
  void SignalGroup(int rank, int sig) override { signals.emplace_back(rank, sig); }
  int KillLeftovers() override { return ++leftover_sweeps, 0; }

  // The signals sent so far to `rank`.
  std::vector<int> SignalsTo(int rank) const {
    std::vector<int> out;
    for (const auto& [r, s] : signals)
      if (r == rank) out.push_back(s);
    return out;
  }

  std::string hold_error;                 // HoldPort fails with this when set
  std::map<int, std::string> start_errors;  // rank -> why it does not start
  uint32_t held = 0;
  uint32_t port_at_start = 0;             // the port still held when StartWorkers ran
  std::vector<msg::Assign> assigns;
  std::vector<std::string> tokens;
  std::string last_snapshot_dir;
  std::vector<std::pair<int, int>> signals;  // (rank, signal)
  int leftover_sweeps = 0;
  std::vector<msg::Assign> added;                          // AddWorkers
  std::vector<std::vector<msg::RankMove>> renumbered;      // Renumber
  std::vector<std::pair<int, msg::WorkerReshape>> control;  // SendControl: (rank, frame)
  std::map<int, std::string> control_errors;               // rank -> why SendControl fails
};

class FakeSnapshots final : public NodeSnapshots {
 public:
  Result<SnapshotPlace> Start(const msg::SnapshotSetup&) override {
    if (!start_error.empty()) return Status::IOError(start_error);
    on_ = true;
    return SnapshotPlace{"127.0.0.1:7000", "/dev/shm/snap"};
  }
  bool on() const override { return on_; }
  std::string memory_dir() const override { return "/dev/shm/snap"; }
  void SetTargets(const msg::Replicate& m) override { targets.push_back(m); }
  void SetPlan(const msg::SnapshotPlan& m) override { plans.push_back(m); }
  void StartFetch(const msg::Fetch& m) override { fetches.push_back(m); }
  std::vector<std::pair<wire::MsgType, Bytes>> TakeOutgoing() override { return std::exchange(outgoing, {}); }
  std::string failure() override { return failed; }
  void FinishHandoffs() override {
    ++finished_handoffs;
    for (auto& m : pending) outgoing.push_back(std::move(m));  // the handoffs still in flight land
    pending.clear();
  }

  std::string start_error;
  std::vector<msg::Replicate> targets;
  std::vector<msg::SnapshotPlan> plans;
  std::vector<msg::Fetch> fetches;
  std::vector<std::pair<wire::MsgType, Bytes>> outgoing;  // ready for TakeOutgoing
  std::vector<std::pair<wire::MsgType, Bytes>> pending;   // become outgoing on FinishHandoffs
  std::string failed;
  int finished_handoffs = 0;

 private:
  bool on_ = false;
};

class FakeTree final : public LaunchTreeChildren {
 public:
  std::vector<msg::AgentEnded> Start(const msg::StartAgents& m) override {
    std::vector<msg::AgentEnded> failed;
    for (const auto& a : m.agents) {
      if (a.argv.empty()) failed.push_back({a.node, 127, 0, "cannot start ''"});
      else ++children;
    }
    return failed;
  }
  size_t running() const override { return children; }
  size_t children = 0;
};

// An AgentControl on fakes: heartbeat every 1 s, the coordinator lost
// after 3 s, a lost coordinator waited for `coordinator_grace` seconds.
struct AgentFixture {
  explicit AgentFixture(double coordinator_grace = 0)
      : control{AgentControlOptions{"node7", 1.0, 3.0, coordinator_grace}, AgentSeams{link, workers, snapshots, tree},
                clock} {}
  FakeClock clock;
  FakeLink link;
  FakeWorkers workers;
  FakeSnapshots snapshots;
  FakeTree tree;
  AgentControl control;

  template <typename M>
  void Deliver(wire::MsgType type, const M& m) {
    control.OnFrame(Frame{type, m.Encode()});
  }
  // Assign generation `gen` with one worker per rank (hang timeout in ms, stop grace 1 s).
  void Assign(uint32_t gen, const std::vector<int>& ranks, uint32_t hang_ms = 0) {
    msg::Assign a;
    a.generation = gen;
    a.argv = {"train"};
    a.stop_grace_ms = 1000;
    a.hang_timeout_ms = hang_ms;
    for (size_t i = 0; i < ranks.size(); ++i) {
      msg::WorkerSpec w;
      w.rank = ranks[i];
      w.local_rank = static_cast<int>(i);
      a.workers.push_back(w);
    }
    Deliver(wire::MsgType::kAssign, a);
  }
  void Stop(uint32_t gen) { Deliver(wire::MsgType::kStop, msg::Stop{gen}); }
  void Shutdown(int exit_code = 0) { control.OnFrame(Frame{wire::MsgType::kShutdown, msg::Shutdown{exit_code}.Encode()}); }
  void Exit(int rank, int code, int sig = 0) { control.OnWorkerExited(WorkerExit{rank, 1000 + rank, code, sig, {}}); }
  // Time passes by `d` and the control acts on what is due.
  void Tick(Clock::duration d) {
    clock.Advance(d);
    control.OnTick();
  }
};

}  // namespace ds::testing
