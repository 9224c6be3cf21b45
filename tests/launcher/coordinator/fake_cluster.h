// FakeCluster: JobControl with in-process fake agents, a fake clock and a
// fake timer, for deterministic tests of the state machine. Each fake agent
// is an AgentLink that records what JobControl sent it; the test plays the
// agents' part by calling the helpers below (register, reserve, start and end
// workers, confirm stops, fall silent, drop the link). No sockets, no
// processes, no sleeps: time moves only in Advance().
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "launcher/config/hostfile.h"
#include "launcher/config/plan.h"
#include "launcher/config/selection.h"
#include "launcher/coordinator/job_control.h"

namespace ds::test {

// Fires its callback when the fake clock passes the armed deadline.
class FakeTimer final : public DeadlineTimer {
 public:
  explicit FakeTimer(FakeClock& clock) : clock_(clock) {}
  void ArmAt(Clock::time_point when, std::function<void()> fire) override {
    when_ = when;
    fire_ = std::move(fire);
  }
  void Cancel() override { when_.reset(); }
  std::optional<Clock::time_point> armed() const { return when_; }
  Clock::time_point Now() const { return clock_.Now(); }
  // Moves the clock forward by `d`, stopping at each deadline on the way to fire it.
  void Advance(Clock::duration d) {
    const auto end = clock_.Now() + d;
    while (when_ && *when_ <= end) {
      if (*when_ > clock_.Now()) clock_.Advance(*when_ - clock_.Now());
      when_.reset();
      auto fire = std::move(fire_);
      fire();
    }
    clock_.Advance(end - clock_.Now());
  }

 private:
  FakeClock& clock_;
  std::optional<Clock::time_point> when_;
  std::function<void()> fire_;
};

class FakeLink final : public AgentLink {
 public:
  void Send(wire::MsgType type, const Bytes& payload) override {
    if (!closed_) sent.emplace_back(type, payload);
  }
  void Close(const std::string& reason, bool /*flush*/ = false) override {
    if (closed_) return;
    closed_ = true;
    close_reason = reason;
  }
  bool closed() const override { return closed_; }
  size_t queued_bytes() const override { return queued; }

  std::vector<std::pair<wire::MsgType, Bytes>> sent;
  std::string close_reason;
  size_t queued = 0;  // what queued_bytes() says: a reader behind

 private:
  bool closed_ = false;
};

// Records what JobControl tells the fleet.
class RecordingFleet final : public FleetEvents {
 public:
  void OnAgentRegistered(int node) override { registered.push_back(node); }
  void OnAgentLost(int node) override { lost.push_back(node); }
  void OnAgentEnded(int parent, const msg::AgentEnded& ended) override { ended_reports.emplace_back(parent, ended); }
  void OnAgentAway(int node) override { away.push_back(node); }

  std::vector<int> registered;
  std::vector<int> lost;
  std::vector<int> away;
  std::vector<std::pair<int, msg::AgentEnded>> ended_reports;
};

class FakeCluster {
 public:
  // `hostfile` in the hostfile grammar; `job` supplies the elastic section.
  FakeCluster(const std::string& hostfile, const JobSpec& job, CoordinatorOptions options = {});

  // Every candidate (nodes, then standbys) registers, in order.
  void RegisterAll();
  void Register(int node);
  // Node 0 of the current generation answers its Reserve with `port`.
  void Reserve(int port = 29500);
  // Every agent with an Assign of the current generation reports its workers started.
  void StartWorkers();
  // Registers, reserves and starts: generation 0 is running.
  void Run() {
    RegisterAll();
    Reserve();
    StartWorkers();
  }
  // Rank `rank` of the current generation exits (on the agent that runs it).
  void Exit(int rank, int code, int signal = 0);
  // Every agent told to Stop in the current generation confirms.
  void ConfirmStops();
  // The agent's link ends (a killed node: the connection resets).
  void Drop(int node, const std::string& reason = "connection reset by peer");
  // Node `node`'s agent sends a frame (e.g. the snapshot messages).
  void Send(int node, wire::MsgType type, const Bytes& payload);
  // The agent stops sending anything (a partitioned or frozen node).
  void Silence(int node) { silent_[node] = true; }
  // Moves time forward; every registered, connected, non-silent agent sends a
  // Ping each heartbeat interval, as real agents do.
  void Advance(double seconds);
  // The coordinator's thread does not run for `seconds` (an overloaded
  // machine): time passes, no timer fires, no frame is read.
  void Stall(double seconds) { clock_.Advance(Seconds(seconds)); }

  // Each node n echoes the coordinator's newest Ping delays[n] seconds after
  // now (in order of delay; time moves to the last): its round trip.
  void EchoPings(const std::vector<double>& delays);
  // The newest message of `type` sent to `node`, decoded; nullopt if none.
  template <class M>
  std::optional<M> Last(int node, wire::MsgType type) const {
    const auto& sent = links_[node]->sent;
    for (auto it = sent.rbegin(); it != sent.rend(); ++it)
      if (it->first == type) return M::Decode(it->second).value();
    return std::nullopt;
  }
  int Count(int node, wire::MsgType type) const;
  // Nodes (candidate indices) that hold workers of the current generation.
  std::vector<int> NodesRunning() const;
  int NodeOfRank(int rank) const;

  JobControl& control() { return *control_; }
  const JobRecord& record() const { return record_; }
  FakeLink& link(int node) { return *links_[node]; }
  const std::vector<std::string>& notices() const { return notices_; }
  const std::vector<int>& lost_events() const { return fleet_.lost; }
  const RecordingFleet& fleet() const { return fleet_; }
  bool done() const { return done_; }
  size_t candidates() const { return links_.size(); }
  FakeTimer& timer() { return timer_; }

 private:
  FakeClock clock_;
  FakeTimer timer_{clock_};
  LaunchPlan plan_;
  JobRecord record_;
  KvStore store_;
  std::vector<std::shared_ptr<FakeLink>> links_;  // by candidate index, replaced on re-register
  std::vector<bool> silent_;
  std::vector<std::string> notices_;
  RecordingFleet fleet_;
  bool done_ = false;
  std::unique_ptr<JobControl> control_;
};

}  // namespace ds::test
