#include "launcher/coordinator/agent_slot.h"

namespace ds {

const char* SlotStateName(SlotState s) {
  switch (s) {
    case SlotState::kAbsent: return "absent";
    case SlotState::kIdle: return "idle";
    case SlotState::kBusy: return "busy";
    case SlotState::kLost: return "lost";
    case SlotState::kEnded: return "ended";
  }
  return "?";
}

bool SlotMoveAllowed(SlotState from, SlotState to) {
  using S = SlotState;
  if (from == to) return from != S::kAbsent;  // an Assign to a busy agent, a Stopped from an idle one
  switch (from) {
    case S::kAbsent: return to == S::kIdle;
    case S::kIdle: return to == S::kBusy || to == S::kLost || to == S::kEnded;
    case S::kBusy: return to == S::kIdle || to == S::kLost || to == S::kEnded;
    case S::kLost: return to == S::kIdle;
    case S::kEnded: return false;
  }
  return false;
}

}  // namespace ds
