#include "runtime/evaluation.h"

namespace ds::rt {

Evaluation EvaluateGlobal(Engine& engine, const Dataset& test, Communicator& comm) {
  const int64_t lo = test.n * comm.rank() / comm.size();
  const int64_t hi = test.n * (comm.rank() + 1) / comm.size();
  const BatchStats st = engine.EvaluateRange(test, lo, hi);
  double sums[3] = {static_cast<double>(st.correct), static_cast<double>(st.count), st.loss_sum};
  comm.AllReduceSum(sums, 3);
  if (sums[1] <= 0) return {};
  return {sums[0] / sums[1], sums[2] / sums[1]};
}

}  // namespace ds::rt
