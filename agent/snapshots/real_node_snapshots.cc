#include "agent/snapshots/real_node_snapshots.h"

namespace ds {

Result<SnapshotPlace> RealNodeSnapshots::Start(const msg::SnapshotSetup& m) {
  DS_ASSIGN_OR_RETURN(keeper_, SnapshotKeeper::Start(me_, m));
  return SnapshotPlace{keeper_->peer_addr(), keeper_->memory_dir()};
}

void RealNodeSnapshots::FinishHandoffs() {
  keeper_->OnInotify();
  keeper_->Drain();
}

}  // namespace ds
