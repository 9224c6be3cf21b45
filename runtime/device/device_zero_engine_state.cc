// DeviceZeroEngine, the whole-model side: parameters in (init, checkpoint
// load) and out (full vectors, checkpoint shards), evaluation and the
// memory report. Everything crosses between host and device here, with
// plain synchronous copies: none of it is on the per-step path.
#include <algorithm>
#include <cstring>

#include "runtime/device/device_zero_engine.h"

namespace ds::rt::dev {
namespace {

// Copies between pageable host memory and the device, complete on return.
// On `s` and synchronized, not plain cudaMemcpy: that one runs on the legacy
// stream, which our non-blocking streams do not wait for, and may return
// before a host-to-device copy has landed.
template <typename T>
void Down(T* host, const T* device, size_t n, cudaStream_t s) {
  if (n == 0) return;
  DS_CUDA(cudaMemcpyAsync(host, device, n * sizeof(T), cudaMemcpyDeviceToHost, s));
  DS_CUDA(cudaStreamSynchronize(s));
}
template <typename T>
void Up(T* device, const T* host, size_t n, cudaStream_t s) {
  if (n == 0) return;
  DS_CUDA(cudaMemcpyAsync(device, host, n * sizeof(T), cudaMemcpyHostToDevice, s));
  DS_CUDA(cudaStreamSynchronize(s));
}

// Full fp32 parameters already on the device, in the compute format.
class FullParams : public DeviceParamSource {
 public:
  FullParams(const Mlp& model, const void* p, size_t esize) : model_(model), p_(p), esize_(esize) {}
  const void* Acquire(int l) override { return static_cast<const uint8_t*>(p_) + model_.layer(l).offset * esize_; }
  void Release(int) override {}

 private:
  const Mlp& model_;
  const void* p_;
  size_t esize_;
};

}  // namespace

void DeviceZeroEngine::Load(const std::vector<float>& master, const std::vector<std::vector<float>>* state) {
  DS_CHECK(master.size() == num_params_);
  comm_.Synchronize(compute());  // bounded: the stream may still wait on collectives
  const size_t slots = static_cast<size_t>(optimizer_.state_slots());
  const std::vector<float> zeros(owned_.shard_size());
  for (const Segment& s : owned_.owned()) {
    const float* m = master.data() + s.flat_offset;
    if (offload_) std::memcpy(master_host_.data() + s.shard_offset, m, s.len * sizeof(float));
    else if (!alias_master_) Up(MasterAt(s), m, s.len, compute());  // aliased: uploaded with compute_ below
    for (size_t k = 0; k < slots; ++k) {
      const float* from = state != nullptr ? (*state)[k].data() + s.flat_offset : zeros.data();
      if (offload_) std::memcpy(state_host_[k].data() + s.shard_offset, from, s.len * sizeof(float));
      else Up(state_[k].data() + s.shard_offset, from, s.len, compute());
    }
  }
  // The compute copy: the full vector (stage < 3; every rank computes with
  // all of it, not only its owned part) or, offloaded, this rank's shard of
  // it (stage 3; otherwise GatherLayer casts the master).
  auto upload = [&](void* to, const float* from, size_t n) {
    if (fmt_ == Precision::kFp32) {
      Up(static_cast<float*>(to), from, n, compute());
      return;
    }
    std::vector<uint16_t> half16(n);
    ToHalf16(from, half16.data(), n, fmt_);
    Up(static_cast<uint16_t*>(to), half16.data(), n, compute());
  };
  if (options_.stage < 3) upload(compute_.data(), master.data(), num_params_);
  if (options_.stage == 3 && offload_)
    for (const Segment& s : owned_.owned())
      upload(ComputeAt(owned_params_.data(), s.shard_offset), master.data() + s.flat_offset, s.len);
  grads_empty_ = true;
}

std::vector<float> DeviceZeroEngine::OwnedMaster() const {
  std::vector<float> out(owned_.shard_size());
  if (offload_) {
    std::copy(master_host_.data(), master_host_.data() + out.size(), out.begin());
    return out;
  }
  comm_.Synchronize(compute());
  auto* self = const_cast<DeviceZeroEngine*>(this);  // MasterAt only computes an address
  for (const Segment& s : owned_.owned()) Down(out.data() + s.shard_offset, self->MasterAt(s), s.len, compute());
  return out;
}

std::vector<std::vector<float>> DeviceZeroEngine::OwnedState() const {
  const size_t n = owned_.shard_size();
  std::vector<std::vector<float>> out;
  if (offload_) {
    for (const auto& s : state_host_) out.emplace_back(s.data(), s.data() + n);
    return out;
  }
  comm_.Synchronize(compute());
  for (const auto& s : state_) {
    out.emplace_back(n);
    Down(out.back().data(), s.data(), n, compute());
  }
  return out;
}

void DeviceZeroEngine::InitParams(uint64_t seed) {
  std::vector<float> full(num_params_);
  model_.Init(full.data(), seed);
  Load(full, nullptr);
  applied_steps_ = 0;
}

void DeviceZeroEngine::ImportFull(const std::vector<float>& master, const std::vector<std::vector<float>>& state,
                                  int64_t applied_steps) {
  DS_CHECK(static_cast<int>(state.size()) == optimizer_.state_slots());
  Load(master, &state);
  applied_steps_ = applied_steps;
}

void DeviceZeroEngine::ExportShardInto(ShardState* out) const {
  // This rank's owned pieces in shard order, then the same selection as the
  // CPU engine's.
  const std::vector<float> master = OwnedMaster();
  const std::vector<std::vector<float>> state = OwnedState();
  ExportShardFrom(
      owned_, saved_, static_cast<int>(state.size()),
      [&](const Segment& s) { return master.data() + s.shard_offset; },
      [&](int k, const Segment& s) { return state[k].data() + s.shard_offset; }, out);
}

// Stage 3: each layer gathered as the forward pass gathers it, into its
// padded partition (world x stride elements, more than the layer), then its
// layer's part copied into place, so no piece spills into the next layer.
const void* DeviceZeroEngine::FullCompute(DeviceBuffer<uint8_t>* gathered) {
  if (options_.stage < 3) return compute_.data();
  gathered->Resize(num_params_ * esize_);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const int layer = static_cast<int>(l);
    void* padded = AllocAsync(owned_.Stride(layer) * owned_.world() * esize_, compute());
    GatherLayer(layer, padded);
    DS_CUDA(cudaMemcpyAsync(ComputeAt(gathered->data(), layers_[l].offset), padded, layers_[l].size() * esize_,
                            cudaMemcpyDeviceToDevice, comm_.stream()));
    FreeAsync(padded, comm_.stream());
  }
  comm_.Join(compute());
  return gathered->data();
}

std::vector<float> DeviceZeroEngine::GatherComputeParams() {
  DeviceBuffer<uint8_t> gathered;
  const void* full = FullCompute(&gathered);
  comm_.Synchronize(compute());
  std::vector<float> out(num_params_);
  if (fmt_ == Precision::kFp32) {
    Down(out.data(), static_cast<const float*>(full), num_params_, compute());
  } else {
    std::vector<uint16_t> half16(num_params_);
    Down(half16.data(), static_cast<const uint16_t*>(full), num_params_, compute());
    FromHalf16(half16.data(), out.data(), num_params_, fmt_);
  }
  return out;
}

std::vector<float> DeviceZeroEngine::GatherMasterParams() {
  const std::vector<float> mine = OwnedMaster();
  std::vector<float> out(num_params_);
  if (options_.stage == 0) {
    for (const Segment& s : owned_.owned())
      std::copy(mine.begin() + s.shard_offset, mine.begin() + s.shard_offset + s.len, out.begin() + s.flat_offset);
    return out;
  }
  DeviceBuffer<float> shard(mine.size()), full(num_params_);
  Up(shard.data(), mine.data(), mine.size(), compute());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Segment& s = owned_.Owned(static_cast<int>(l));
    comm_.AllGather(shard.data() + s.shard_offset, full.data() + layers_[l].offset,
                    owned_.LayerCounts(static_cast<int>(l)), Precision::kFp32, compute());
  }
  comm_.Join(compute());
  comm_.Synchronize(compute());
  Down(out.data(), full.data(), num_params_, compute());
  return out;
}

BatchStats DeviceZeroEngine::EvaluateRange(const Dataset& test, int64_t lo, int64_t hi) {
  // The evaluation batch grows the model's buffers, and freeing the old ones
  // (cudaFree, cudaFreeHost) waits for the whole device without a bound,
  // the last step's collectives included (stage 1/2's all-gathers, which
  // the host never waited for): they are waited for first, bounded.
  comm_.Join(compute());
  comm_.Synchronize(compute());
  // Stage 3 gathers every layer once (collective), as the CPU engine does;
  // then each rank evaluates its own range alone.
  DeviceBuffer<uint8_t> gathered;
  FullParams params(model_, FullCompute(&gathered), esize_);
  const Resident* resident = ResidentOf(test);
  std::vector<int64_t> index(kEvalBatch);
  BatchStats sums;
  for (int64_t i = lo; i < hi; i += kEvalBatch) {
    const int b = static_cast<int>(std::min<int64_t>(kEvalBatch, hi - i));
    BatchStats st;
    if (resident != nullptr) {
      for (int k = 0; k < b; ++k) index[k] = i + k;
      Gather(*resident, test.features, index.data(), b);
      st = mlp_.Evaluate(params, b);
    } else {
      st = mlp_.Evaluate(params, test.sample(i), test.y.data() + i, b);
    }
    sums += st;
  }
  comm_.Synchronize(compute());  // `gathered` is freed on return
  return sums;
}

MemoryReport DeviceZeroEngine::Memory() const {
  // Device memory only: offloaded master weights and state are on the host.
  MemoryReport m;
  m.params = compute_.size() + owned_params_.size();
  m.grads = grads_.size();
  m.optimizer = master_.bytes();
  for (const auto& s : state_) m.optimizer += s.bytes();
  m.formula = ZeroMemoryFormula(options_.stage, half(), optimizer_.state_slots(),
                                static_cast<double>(num_params_), comm_.size());
  return m;
}

}  // namespace ds::rt::dev
