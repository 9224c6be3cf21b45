// The agent's worker-state table (agent/control/worker_slot.h), move by move.
#include "agent/control/worker_slot.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <utility>

namespace ds {
namespace {

using W = WorkerSlotState;
constexpr W kAll[] = {W::kStarted, W::kBeating, W::kHangSaid, W::kKilledForHang, W::kEnded};

TEST_CASE("WorkerSlotState: exactly the moves of the diagram are allowed, every other one is refused") {
  const std::set<std::pair<W, W>> allowed = {
      {W::kStarted, W::kBeating},      {W::kStarted, W::kEnded},
      {W::kBeating, W::kHangSaid},     {W::kBeating, W::kKilledForHang}, {W::kBeating, W::kEnded},
      {W::kBeating, W::kStarted},      {W::kHangSaid, W::kKilledForHang}, {W::kHangSaid, W::kEnded},
      {W::kHangSaid, W::kStarted},     {W::kKilledForHang, W::kEnded},
  };
  for (W from : kAll)
    for (W to : kAll) {
      INFO(WorkerSlotName(from) << " -> " << WorkerSlotName(to));
      CHECK(WorkerMoveAllowed(from, to) == (allowed.count({from, to}) == 1));
    }
}

TEST_CASE("WorkerSlotState: an ended worker is final, a killed one only ends, and none is judged before it beats") {
  for (W to : kAll) CHECK_FALSE(WorkerMoveAllowed(W::kEnded, to));
  for (W to : kAll) CHECK(WorkerMoveAllowed(W::kKilledForHang, to) == (to == W::kEnded));
  CHECK_FALSE(WorkerMoveAllowed(W::kStarted, W::kHangSaid));
  CHECK_FALSE(WorkerMoveAllowed(W::kStarted, W::kKilledForHang));
}

TEST_CASE("WorkerSlotState: every state has its name") {
  std::set<std::string> names;
  for (W s : kAll) names.insert(WorkerSlotName(s));
  CHECK(names.size() == std::size(kAll));
}

}  // namespace
}  // namespace ds
