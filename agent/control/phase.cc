#include "agent/control/phase.h"

namespace ds {

const char* PhaseName(AgentPhase p) {
  switch (p) {
    case AgentPhase::kIdle: return "idle";
    case AgentPhase::kRunning: return "running";
    case AgentPhase::kStopping: return "stopping";
    case AgentPhase::kAdrift: return "adrift";
    case AgentPhase::kQuitting: return "quitting";
    case AgentPhase::kLingering: return "lingering";
    case AgentPhase::kFinished: return "finished";
  }
  return "?";
}

bool PhaseTransitionAllowed(AgentPhase from, AgentPhase to) {
  using P = AgentPhase;
  switch (from) {
    case P::kIdle:
    case P::kRunning:
      return to == P::kRunning || to == P::kStopping || to == P::kAdrift || to == P::kQuitting;
    case P::kStopping:
      return to == P::kIdle || to == P::kRunning || to == P::kQuitting;
    case P::kAdrift:
      return to == P::kIdle || to == P::kRunning || to == P::kQuitting;
    case P::kQuitting:
      return to == P::kLingering || to == P::kFinished;
    case P::kLingering:
      return to == P::kFinished;
    case P::kFinished:
      return false;
  }
  return false;
}

}  // namespace ds
