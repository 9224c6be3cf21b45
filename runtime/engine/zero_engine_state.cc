// ZeroEngine, the whole-model side: full parameter vectors, the memory
// report, and a rank's checkpoint shard out and the full state in
// (zero_engine.h). The step itself is in zero_engine.cc.
#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "runtime/engine/zero_engine.h"

namespace ds::rt {

std::vector<float> ZeroEngine::GatherComputeParams() {
  std::vector<float> full(num_params_);
  if (options_.stage < 3) {
    if (half()) FromHalf16(compute16_.data(), full.data(), num_params_, options_.precision);
    else full = compute32_;
    return full;
  }
  for (size_t l = 0; l < layers_.size(); ++l)
    GatherLayer(static_cast<int>(l), MasterPtr(owned_.Owned(static_cast<int>(l))),
                full.data() + layers_[l].offset);
  return full;
}

std::vector<float> ZeroEngine::GatherMasterParams() {
  std::vector<float> full(num_params_);
  if (options_.stage == 0) {
    for (const Segment& s : owned_.owned())
      std::memcpy(full.data() + s.flat_offset, MasterPtr(s), s.len * sizeof(float));
    return full;
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Segment& s = owned_.Owned(static_cast<int>(l));
    std::vector<float> send(MasterPtr(s), MasterPtr(s) + s.len);
    comm_.AllGather(send.data(), full.data() + layers_[l].offset,
                    owned_.LayerCounts(static_cast<int>(l)));
  }
  return full;
}

MemoryReport ZeroEngine::Memory() const {
  MemoryReport m;
  m.params = compute32_.size() * sizeof(float) + compute16_.size() * sizeof(uint16_t);
  m.grads = grad32_.size() * sizeof(float) + grad16_.size() * sizeof(uint16_t);
  m.optimizer = master_.size() * sizeof(float);
  for (const auto& s : state_) m.optimizer += s.size() * sizeof(float);
  m.formula = ZeroMemoryFormula(options_.stage, half(), optimizer_.state_slots(),
                                static_cast<double>(num_params_), comm_.size());
  return m;
}

void ZeroEngine::ExportShardInto(ShardState* out) const {
  // Stage 0 owns everything (world-1 partition): its shard offsets are flat offsets.
  ExportShardFrom(
      owned_, saved_, static_cast<int>(state_.size()), [this](const Segment& s) { return MasterPtr(s); },
      [this](int k, const Segment& s) { return state_[k].data() + s.shard_offset; }, out);
}

BatchStats ZeroEngine::EvaluateRange(const Dataset& test, int64_t lo, int64_t hi) {
  const std::vector<float> full = GatherComputeParams();
  struct Full : ParamSource {
    const Mlp& model;
    const std::vector<float>& p;
    Full(const Mlp& m, const std::vector<float>& v) : model(m), p(v) {}
    const float* Acquire(int layer) override { return p.data() + model.layer(layer).offset; }
    void Release(int) override {}
  } params(model_, full);
  BatchStats sums;
  for (int64_t i = lo; i < hi; i += kEvalBatch) {
    const int b = static_cast<int>(std::min<int64_t>(kEvalBatch, hi - i));
    sums += model_.Evaluate(params, test.sample(i), test.y.data() + i, b);
  }
  return sums;
}

void ZeroEngine::ImportFull(const std::vector<float>& master,
                            const std::vector<std::vector<float>>& state, int64_t applied_steps) {
  DS_CHECK(master.size() == num_params_ && state.size() == state_.size());
  for (const Segment& s : owned_.owned()) {
    std::memcpy(MasterPtr(s), master.data() + s.flat_offset, s.len * sizeof(float));
    for (size_t k = 0; k < state_.size(); ++k)
      std::memcpy(state_[k].data() + s.shard_offset, state[k].data() + s.flat_offset,
                  s.len * sizeof(float));
  }
  if (options_.stage < 3) {
    if (half()) ToHalf16(master.data(), compute16_.data(), num_params_, options_.precision);
    else compute32_ = master;
  }
  applied_steps_ = applied_steps;
  ZeroGrads();
}

}  // namespace ds::rt
