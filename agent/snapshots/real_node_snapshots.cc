#include "agent/snapshots/real_node_snapshots.h"

namespace ds {

Result<SnapshotPlace> RealNodeSnapshots::Start(const msg::SnapshotSetup& m) {
  if (keeper_) {  // a new leader's (coordinator failover): the keeper, its shards and its server stay
    keeper_->ReportHeld();
    return SnapshotPlace{keeper_->peer_addr(), keeper_->memory_dir()};
  }
  DS_ASSIGN_OR_RETURN(keeper_, SnapshotKeeper::Start(me_, m));
  return SnapshotPlace{keeper_->peer_addr(), keeper_->memory_dir()};
}

void RealNodeSnapshots::FinishHandoffs() {
  keeper_->OnInotify();
  keeper_->Drain();
}

}  // namespace ds
