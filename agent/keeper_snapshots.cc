#include "agent/keeper_snapshots.h"

namespace ds {

Result<SnapshotPlace> KeeperSnapshots::Start(const msg::SnapshotSetup& m) {
  DS_ASSIGN_OR_RETURN(keeper_, SnapshotKeeper::Start(me_, m));
  return SnapshotPlace{keeper_->peer_addr(), keeper_->memory_dir()};
}

void KeeperSnapshots::FinishHandoffs() {
  keeper_->OnInotify();
  keeper_->Drain();
}

}  // namespace ds
