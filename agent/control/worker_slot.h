// WorkerSlotState: where one of this agent's workers is, as AgentControl
// sees it, and the one table of the moves between states (AgentControl
// changes a worker's state only through WorkerMoveAllowed; a move the table
// does not hold is refused, logged, and the event that asked is dropped).
// The agent's side of what the coordinator's WorkerPhase
// (launcher/report/worker_phase.h) records. Pure values; safe from any thread.
//
//   kStarted --first step beat--> kBeating --silent for hang_timeout--> kHangSaid
//      |                             |   \___ (no coordinator to tell) ___    |
//      |                             |                                     v   v
//      |                             |                            kKilledForHang
//      +------------- exited --------+-------------+----------------------+--> kEnded
//   kBeating, kHangSaid --Reshape (renumbered in place)--> kStarted
//
// Only a worker that beat is hang-checked (kBeating): one that never beats
// is not judged by silence. kHangSaid: WorkerHung sent; the coordinator
// takes every rank's stacks and stops the generation, and only if no stop
// came by the slot's kill time is it killed here. kEnded is final: its
// WorkerExited was sent (or it never started). Never a set of booleans (it
// was five: running, reported, beaten, hung, hang_said).
#pragma once

#include <cstdint>

namespace ds {

enum class WorkerSlotState : uint8_t {
  kStarted,        // running; no step beat yet in this generation (not hang-checked)
  kBeating,        // running; it beats, and its silence is judged
  kHangSaid,       // running; silent past hang_timeout, WorkerHung sent, killed at its kill time if no stop came
  kKilledForHang,  // SIGKILLed for its silence; its end follows (reported hung)
  kEnded,          // ended, or never started; WorkerExited sent
};

// "started", "beating", ... for logs and test messages.
const char* WorkerSlotName(WorkerSlotState s);

// Whether a worker may move from `from` to `to` (the diagram above).
bool WorkerMoveAllowed(WorkerSlotState from, WorkerSlotState to);

}  // namespace ds
