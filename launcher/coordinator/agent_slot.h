// SlotState: where one candidate's agent (a plan node or a standby) is, as
// JobControl sees it, and the one table of the moves between states
// (JobControl changes a slot's state only through AgentSlot::MoveTo, which
// checks the table). Pure values; safe from any thread.
//
//   kAbsent --Register--> kIdle --Assign with workers, Stop, Reshape--> kBusy
//                           ^  <------------- Stopped ----------------'
//   kIdle, kBusy --link lost or silent--> kLost --Register (rejoin)--> kIdle
//   kIdle, kBusy --link ends after the job is done--> kEnded
//
// kBusy: it has, or may have, workers of the current generation, so a stop
// waits for its Stopped (or its loss); kIdle: it confirmed it has none.
// Never a set of booleans (it was four: registered, lost, ended, stopped).
#pragma once

#include <cstdint>

namespace ds {

enum class SlotState : uint8_t {
  kAbsent,  // never registered
  kIdle,    // registered, connected, no workers of the current generation
  kBusy,    // registered, connected, workers of the current generation (a stop waits for it)
  kLost,    // its link ended or it fell silent while the job ran; may register again (rejoin)
  kEnded,   // its link ended after the job was done: not a loss
};

const char* SlotStateName(SlotState s);
bool SlotMoveAllowed(SlotState from, SlotState to);

}  // namespace ds
