#include "agent/control/worker_slot.h"

namespace ds {

const char* WorkerSlotName(WorkerSlotState s) {
  switch (s) {
    case WorkerSlotState::kStarted: return "started";
    case WorkerSlotState::kBeating: return "beating";
    case WorkerSlotState::kHangSaid: return "hang said";
    case WorkerSlotState::kKilledForHang: return "killed for a hang";
    case WorkerSlotState::kEnded: return "ended";
  }
  return "?";
}

bool WorkerMoveAllowed(WorkerSlotState from, WorkerSlotState to) {
  using W = WorkerSlotState;
  switch (from) {
    case W::kStarted: return to == W::kBeating || to == W::kEnded;
    case W::kBeating: return to == W::kHangSaid || to == W::kKilledForHang || to == W::kEnded || to == W::kStarted;
    case W::kHangSaid: return to == W::kKilledForHang || to == W::kEnded || to == W::kStarted;
    case W::kKilledForHang: return to == W::kEnded;
    case W::kEnded: return false;
  }
  return false;
}

}  // namespace ds
