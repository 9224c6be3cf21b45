// RealNodeSnapshots: the real NodeSnapshots (agent_seams.h): a SnapshotKeeper
// started on SnapshotSetup, none before (snapshots off). The event loop
// polls keeper()'s inotify and events fds. Not thread-safe: the agent's
// event loop only (the keeper runs threads of its own, snapshot_keeper.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/control/seams.h"
#include "agent/snapshots/keeper.h"

namespace ds {

class RealNodeSnapshots final : public NodeSnapshots {
 public:
  explicit RealNodeSnapshots(SnapshotKeeper::Identity me) : me_(std::move(me)) {}

  Result<SnapshotPlace> Start(const msg::SnapshotSetup& m) override;
  bool on() const override { return keeper_ != nullptr; }
  std::string memory_dir() const override { return keeper_->memory_dir(); }
  void SetTargets(const msg::Replicate& m) override { keeper_->SetTargets(m); }
  void SetPlan(const msg::SnapshotPlan& m) override { keeper_->SetPlan(m); }
  void StartFetch(const msg::Fetch& m) override { keeper_->StartFetch(m); }
  std::vector<std::pair<wire::MsgType, Bytes>> TakeOutgoing() override { return keeper_->TakeOutgoing(); }
  std::string failure() override { return keeper_->failure(); }
  void FinishHandoffs() override;

  SnapshotKeeper* keeper() { return keeper_.get(); }  // null while off

 private:
  SnapshotKeeper::Identity me_;
  std::unique_ptr<SnapshotKeeper> keeper_;
};

}  // namespace ds
