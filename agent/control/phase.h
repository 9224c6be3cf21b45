// AgentPhase: where a registered agent is in its life, and the one table of
// the moves between phases (AgentControl changes phase only through
// PhaseTransitionAllowed; a move the table does not hold is refused and the
// event that asked for it is dropped). Pure values; safe from any thread.
//
//   kIdle --Assign--> kRunning --Stop--> kStopping --all ended, Stopped--> kIdle
//     \______________Stop (no workers)______^
//   Assign (the next generation) enters kRunning from kIdle, kRunning or kStopping.
//   kIdle, kRunning, kStopping --Shutdown, lost coordinator, signal, failed snapshot
//   thread--> kQuitting --all ended--> [kLingering] --> kFinished
//   kIdle, kRunning --lost coordinator, coordinator.grace > 0--> kAdrift
//   kAdrift --registered with a new leader--> the phase it left (kIdle or kRunning)
//   kAdrift --grace over, signal--> kQuitting
//
// A generation only moves forward (Idle -> Running -> Stopping -> Idle); an
// Assign opens the next one, the only way back to kRunning. Leaving is final:
// from kQuitting no Assign starts a worker and no phase is left but
// kLingering (after Shutdown, waiting a bounded time for the agents this one
// started in a launch tree) and kFinished. Like torchelastic's WorkerState
// and Gloo's pair states, never a set of booleans.
#pragma once

#include <cstdint>

namespace ds {

enum class AgentPhase : uint8_t {
  kIdle,       // registered; no workers (before the first Assign, or after a Stopped)
  kRunning,    // a generation's workers were started (some may have ended)
  kStopping,   // Stop: SIGTERM to every group, SIGKILL after the grace; Stopped when all ended
  kAdrift,     // the coordinator is lost: the workers run on while the agent looks for a new leader
  kQuitting,   // leaving: workers stopped as in kStopping, then the last snapshot handoffs kept
  kLingering,  // after Shutdown: the launch tree's agents this one started get a bounded time to end
  kFinished,   // the event loop ends with AgentControl::exit_code()
};

// "idle", "running", ... for logs and test messages.
const char* PhaseName(AgentPhase p);

// Whether the agent may move from `from` to `to` (the diagram above).
bool PhaseTransitionAllowed(AgentPhase from, AgentPhase to);

}  // namespace ds
