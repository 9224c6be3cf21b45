#include "tests/integration/recovery_cluster.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace ds::testing {

RecoveryCluster::RecoveryCluster(const std::string& root, int nodes) : slots_(static_cast<size_t>(nodes)) {
  for (int n = 0; n < nodes; ++n) slots_[n].disk = fmt::format("{}/disk{}", root, n);
}

RecoveryCluster::~RecoveryCluster() { EndRun(); }

void RecoveryCluster::StartRun(const std::string& run, const std::vector<int>& nodes) {
  EndRun();
  run_ = run;
  index_ = SnapshotIndex();
  point_ = std::make_unique<RecoveryPoint>(run, /*on_disk=*/true);
  bad_.clear();
  seen_.clear();
  for (int n : nodes) StartNode(n);
}

void RecoveryCluster::EndRun() {
  for (Slot& s : slots_) s.keeper.reset();
}

void RecoveryCluster::KillNode(int n) {
  slots_[n].keeper.reset();
  index_.Forget(n);
  point_->Forget(n);
}

void RecoveryCluster::StartNode(int n) {
  msg::SnapshotSetup setup{slots_[n].disk, 2, "peer-key", run_};
  // The property is about what is kept, not about the agents' CPU budget
  // (snapshot_keeper_test's): a whole core, so a burst of saves is secured at once.
  auto k = SnapshotKeeper::Start({"job", fmt::format("w{}", n), static_cast<uint32_t>(n), "127.0.0.1"}, setup, "",
                                 SnapshotBudget{1.0, 1.0});
  if (!k.ok()) throw std::runtime_error("starting node " + std::to_string(n) + "'s agent: " + k.status().message());
  slots_[n].keeper = std::move(k).value();
  index_.Forget(n);  // what it held before is reported again (JobControl::SetUpSnapshots)
  point_->Forget(n);
  slots_[n].keeper->SetPlan(point_->plan());
  Pump(0);
}

std::vector<int> RecoveryCluster::UpNodes() const {
  std::vector<int> out;
  for (int n = 0; n < nodes(); ++n)
    if (up(n)) out.push_back(n);
  return out;
}

std::vector<int> RecoveryCluster::Targets(int n, int replicas) const {
  const std::vector<int> ups = UpNodes();
  const auto at = std::find(ups.begin(), ups.end(), n) - ups.begin();
  std::vector<int> out;
  const int count = std::min<int>(replicas, static_cast<int>(ups.size()) - 1);
  for (int k = 1; k <= count; ++k) out.push_back(ups[(at + k) % ups.size()]);
  return out;
}

void RecoveryCluster::Pump(int timeout_ms) {
  std::vector<pollfd> fds;
  for (int n : UpNodes()) {
    fds.push_back({slots_[n].keeper->inotify_fd(), POLLIN, 0});
    fds.push_back({slots_[n].keeper->events_fd(), POLLIN, 0});
  }
  ::poll(fds.data(), fds.size(), timeout_ms);
  for (int n : UpNodes()) {
    SnapshotKeeper& k = *slots_[n].keeper;
    k.OnInotify();
    for (auto& [type, payload] : k.TakeOutgoing()) {
      if (type == wire::MsgType::kSnapshotHeld) {
        auto m = msg::SnapshotHeld::Decode(payload);
        if (!m.ok()) throw std::runtime_error("SnapshotHeld: " + m.status().message());
        index_.Apply(n, *m);
        point_->Apply(n, *m);
        for (const msg::ShardEntry& e : m->added) seen_.insert({n, e.step, e.id.set, e.shard, e.tier});
      } else if (type == wire::MsgType::kFetched) {
        fetched_.emplace_back(n, msg::Fetched::Decode(payload).value());
      }
    }
  }
  if (point_->Update())
    for (int n : UpNodes()) slots_[n].keeper->SetPlan(point_->plan());
}

bool RecoveryCluster::WaitFor(const std::function<bool()>& done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    Pump(50);
  }
  return true;
}

bool RecoveryCluster::Settle(const std::set<Held>& expected) {
  return WaitFor([&] { return std::includes(seen_.begin(), seen_.end(), expected.begin(), expected.end()); });
}

RecoveryChoice RecoveryCluster::Gather(int gen, int replicas, std::string* said) {
  std::vector<bool> alive(slots_.size());
  std::vector<std::string> hosts;
  for (int n = 0; n < nodes(); ++n) {
    alive[n] = up(n);
    hosts.push_back(fmt::format("w{}", n));
  }
  said->clear();
  for (;;) {
    Pump(0);
    const RecoveryChoice c = index_.Decide(alive, run_, bad_);
    *said += DescribeRecovery(c, hosts) + "\n";
    msg::Fetch fetch{static_cast<uint32_t>(gen), c.step, c.id, {}};
    for (const ShardPick& p : c.picks)
      fetch.sources.push_back({p.shard, static_cast<uint32_t>(p.holder), slots_[p.holder].keeper->peer_addr()});
    fetched_.clear();
    for (int n : UpNodes()) slots_[n].keeper->StartFetch(fetch);
    auto answered = [&](int n) {
      return std::any_of(fetched_.begin(), fetched_.end(), [&](const auto& f) {
        return f.first == n && f.second.generation == fetch.generation && f.second.step == c.step &&
               f.second.set == c.id.set;
      });
    };
    auto all_answered = [&] {
      for (int n : UpNodes())
        if (!answered(n)) return false;
      return true;
    };
    if (!WaitFor(all_answered))
      throw std::runtime_error(fmt::format("generation {}: a Fetch of step {} was never answered", gen, c.step));
    std::string error;
    for (const auto& [n, f] : fetched_)
      if (!f.error.empty() && error.empty()) error = fmt::format("w{} could not gather step {}: {}", n, c.step, f.error);
    if (error.empty()) {
      const std::vector<int> ups = UpNodes();
      point_->NewGeneration(ups.empty() ? 1 : 1 + static_cast<int>(Targets(ups.front(), replicas).size()), c.step);
      point_->Resumed(c.step);
      for (int n : UpNodes()) {
        msg::Replicate r{static_cast<uint32_t>(gen), {}, {}};
        for (int m : ups) r.peers.push_back(slots_[m].keeper->peer_addr());
        for (int t : Targets(n, replicas))
          r.targets.push_back({static_cast<uint32_t>(t), slots_[t].keeper->peer_addr()});
        slots_[n].keeper->SetTargets(r);
      }
      return c;
    }
    *said += error + "; trying an older step\n";
    bad_.insert({c.step, c.id.set});
  }
}

}  // namespace ds::testing
