// WorkerPhase: where one rank of the current generation is, as the
// coordinator records it (JobRecord's WorkerRecord), and the one table of
// its moves. The agent's finer view of the same worker (beating, said hung,
// killed for it) is agent/control/worker_slot.h; what crosses between the
// two is WorkerStarted and WorkerExited.
//
//   kAssigned --WorkerStarted--> kRunning --WorkerExited--> kExited
//       \___________ WorkerExited (it could not be started) ______^
//
// A rank's next generation is a new record (OnAssigned), never a move back.
// Pure values; safe from any thread.
#pragma once

#include <cstdint>

namespace ds {

enum class WorkerPhase : uint8_t {
  kAssigned,  // in the generation's plan; not started yet
  kRunning,   // its agent said it started
  kExited,    // its end is recorded (code, signal, hung)
};

constexpr const char* WorkerPhaseName(WorkerPhase p) {
  return p == WorkerPhase::kAssigned ? "assigned" : p == WorkerPhase::kRunning ? "running" : "exited";
}

constexpr bool WorkerPhaseMoveAllowed(WorkerPhase from, WorkerPhase to) {
  return (from == WorkerPhase::kAssigned && (to == WorkerPhase::kRunning || to == WorkerPhase::kExited)) ||
         (from == WorkerPhase::kRunning && to == WorkerPhase::kExited);
}

}  // namespace ds
