// Test-set evaluation across ranks: every rank evaluates its contiguous
// slice of the test set with the full (gathered) parameters, and one
// allreduce sums the counts. Collective: every rank must call it at the same
// point; throws CommError when the communicator fails.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/model/data.h"
#include "runtime/engine/engine.h"

namespace ds::rt {

struct Evaluation {
  double accuracy = 0;  // correct / samples over all ranks; 0 for an empty set
  double loss = 0;      // mean loss over all ranks' samples
};

Evaluation EvaluateGlobal(Engine& engine, const Dataset& test, Communicator& comm);

}  // namespace ds::rt
