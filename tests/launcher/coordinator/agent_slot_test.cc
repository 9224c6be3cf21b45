// The agent slot's one table (agent_slot.h): every move JobControl makes is
// in it, and none that would undo a loss or an end.
#include "launcher/coordinator/agent_slot.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using S = SlotState;

TEST_CASE("agent slot: the moves of the diagram, and no other", "[unit]") {
  const S all[] = {S::kAbsent, S::kIdle, S::kBusy, S::kLost, S::kEnded};
  const std::pair<S, S> allowed[] = {{S::kAbsent, S::kIdle}, {S::kIdle, S::kBusy},  {S::kBusy, S::kIdle},
                                     {S::kIdle, S::kLost},   {S::kBusy, S::kLost},  {S::kLost, S::kIdle},
                                     {S::kIdle, S::kEnded},  {S::kBusy, S::kEnded}, {S::kIdle, S::kIdle},
                                     {S::kBusy, S::kBusy},   {S::kLost, S::kLost},  {S::kEnded, S::kEnded}};
  for (S from : all)
    for (S to : all) {
      bool want = false;
      for (const auto& [f, t] : allowed) want = want || (f == from && t == to);
      INFO(SlotStateName(from) << " -> " << SlotStateName(to));
      CHECK(SlotMoveAllowed(from, to) == want);
    }
  CHECK(std::string(SlotStateName(S::kBusy)) == "busy");
}

}  // namespace
}  // namespace ds
