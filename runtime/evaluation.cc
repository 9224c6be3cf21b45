#include "runtime/evaluation.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace ds::rt {
namespace {

// A ParamSource over a full fp32 vector.
class FullParams : public ParamSource {
 public:
  FullParams(const Mlp& model, std::vector<float> p) : model_(model), p_(std::move(p)) {}
  const float* Acquire(int layer) override { return p_.data() + model_.layer(layer).offset; }
  void Release(int) override {}

 private:
  const Mlp& model_;
  std::vector<float> p_;
};

}  // namespace

Evaluation EvaluateGlobal(ZeroEngine& engine, Mlp& model, const Dataset& test, Communicator& comm) {
  FullParams params(model, engine.GatherComputeParams());
  const int64_t lo = test.n * comm.rank() / comm.size();
  const int64_t hi = test.n * (comm.rank() + 1) / comm.size();
  double sums[3] = {0, 0, 0};  // correct, count, loss
  for (int64_t i = lo; i < hi; i += 1000) {
    const int b = static_cast<int>(std::min<int64_t>(1000, hi - i));
    BatchStats st = model.Evaluate(params, test.sample(i), test.y.data() + i, b);
    sums[0] += st.correct;
    sums[1] += st.count;
    sums[2] += st.loss_sum;
  }
  comm.AllReduceSum(sums, 3);
  if (sums[1] <= 0) return {};
  return {sums[0] / sums[1], sums[2] / sums[1]};
}

}  // namespace ds::rt
