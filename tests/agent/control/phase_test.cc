// The agent's phase table (agent/control/phase.h), move by move.
#include "agent/control/phase.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <utility>

namespace ds {
namespace {

using P = AgentPhase;
constexpr P kAll[] = {P::kIdle,     P::kRunning,   P::kStopping, P::kAdrift,
                      P::kQuitting, P::kLingering, P::kFinished};

TEST_CASE("AgentPhase: exactly the moves of the diagram are allowed, every other one is refused") {
  const std::set<std::pair<P, P>> allowed = {
      {P::kIdle, P::kRunning},      {P::kIdle, P::kStopping},      {P::kIdle, P::kQuitting},
      {P::kRunning, P::kRunning},   {P::kRunning, P::kStopping},   {P::kRunning, P::kQuitting},
      {P::kStopping, P::kIdle},     {P::kStopping, P::kRunning},   {P::kStopping, P::kQuitting},
      {P::kIdle, P::kAdrift},       {P::kRunning, P::kAdrift},     {P::kAdrift, P::kIdle},
      {P::kAdrift, P::kRunning},    {P::kAdrift, P::kQuitting},
      {P::kQuitting, P::kLingering}, {P::kQuitting, P::kFinished}, {P::kLingering, P::kFinished},
  };
  for (P from : kAll)
    for (P to : kAll) {
      INFO(PhaseName(from) << " -> " << PhaseName(to));
      CHECK(PhaseTransitionAllowed(from, to) == (allowed.count({from, to}) == 1));
    }
}

TEST_CASE("AgentPhase: leaving is final, nothing leaves kFinished, and only a stop's end or a resume goes back to kIdle") {
  for (P to : kAll) CHECK_FALSE(PhaseTransitionAllowed(P::kFinished, to));
  for (P from : {P::kQuitting, P::kLingering})
    for (P to : {P::kIdle, P::kRunning, P::kStopping, P::kAdrift, P::kQuitting}) CHECK_FALSE(PhaseTransitionAllowed(from, to));
  for (P from : kAll)
    if (from != P::kStopping && from != P::kAdrift) CHECK_FALSE(PhaseTransitionAllowed(from, P::kIdle));
}

TEST_CASE("AgentPhase: every phase has its name") {
  std::set<std::string> names;
  for (P p : kAll) names.insert(PhaseName(p));
  CHECK(names == std::set<std::string>{"idle", "running", "stopping", "adrift", "quitting", "lingering",
                                          "finished"});
}

}  // namespace
}  // namespace ds
