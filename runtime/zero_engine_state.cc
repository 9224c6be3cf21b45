// ZeroEngine, the whole-model side: full parameter vectors, the memory
// report, and a rank's checkpoint shard out and the full state in
// (zero_engine.h). The step itself is in zero_engine.cc.
#include <cstring>

#include "common/check.h"
#include "runtime/zero_engine.h"

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
  // The ZeRO paper's accounting with b bytes per compute parameter/gradient
  // and K bytes of optimizer state per parameter. Mixed-precision Adam: b = 2,
  // K = 12 (fp32 master + m + v) gives 16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N. In
  // fp32 the parameters are their own master copy: b = 4, K = 4 * slots.
  const double psi = static_cast<double>(num_params_), n = comm_.size();
  const double b = half() ? 2 : 4;
  const double k = 4.0 * optimizer_.state_slots() + (half() ? 4 : 0);
  switch (options_.stage) {
    case 0: m.formula = (2 * b + k) * psi; break;
    case 1: m.formula = 2 * b * psi + k * psi / n; break;
    case 2: m.formula = b * psi + (b + k) * psi / n; break;
    default: m.formula = (2 * b + k) * psi / n; break;
  }
  return m;
}

ShardState ZeroEngine::ExportShard() const {
  ShardState out;
  ExportShardInto(&out);
  return out;
}

void ZeroEngine::ExportShardInto(ShardState* into) const {
  ShardState& out = *into;
  out.segments = saved_.owned();
  out.master.resize(saved_.shard_size());
  out.state.resize(state_.size());
  for (auto& slot : out.state) slot.resize(saved_.shard_size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Segment& want = saved_.Owned(static_cast<int>(l));
    // Stage 0 owns everything (world-1 partition): its shard offsets are flat offsets.
    const Segment& have = owned_.Owned(static_cast<int>(l));
    const size_t skip = want.flat_offset - have.flat_offset;
    DS_CHECK(want.flat_offset >= have.flat_offset && skip + want.len <= have.len);
    std::memcpy(out.master.data() + want.shard_offset, MasterPtr(have) + skip,
                want.len * sizeof(float));
    for (size_t k = 0; k < state_.size(); ++k)
      std::memcpy(out.state[k].data() + want.shard_offset,
                  state_[k].data() + have.shard_offset + skip, want.len * sizeof(float));
  }
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
