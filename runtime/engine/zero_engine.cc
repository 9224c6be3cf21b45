#include "runtime/engine/zero_engine.h"

#include <cstring>

#include "common/check.h"

namespace ds::rt {
namespace {

Half16 FormatOf(Precision p) { return p == Precision::kFp16 ? Half16::kFp16 : Half16::kBf16; }

// dst += src in 16-bit storage (sum in fp32, rounded once).
void Accumulate16(uint16_t* dst, const float* src, size_t n, Precision p) {
  for (size_t i = 0; i < n; ++i) {
    float v = (p == Precision::kFp16 ? HalfToFloat(dst[i]) : Bf16ToFloat(dst[i])) + src[i];
    dst[i] = p == Precision::kFp16 ? FloatToHalf(v) : FloatToBf16(v);
  }
}

}  // namespace

ZeroEngine::ZeroEngine(Mlp& model, Communicator& comm, const Optimizer& optimizer,
                       const ZeroOptions& options)
    : model_(model),
      comm_(comm),
      optimizer_(optimizer),
      options_(options),
      layers_(LayersOf(model)),
      owned_(layers_, options.stage == 0 ? 1 : comm.size(), options.stage == 0 ? 0 : comm.rank()),
      saved_(layers_, comm.size(), comm.rank()),
      num_params_(model.num_params()),
      scaler_(options.loss_scaler) {
  DS_CHECK(options.stage >= 0 && options.stage <= 3);
  alias_master_ = !half() && options_.stage < 3;
  if (options_.stage < 3) {
    if (half()) compute16_.assign(num_params_, 0); else compute32_.assign(num_params_, 0.f);
  }
  if (!alias_master_) master_.assign(owned_.shard_size(), 0.f);
  state_.assign(optimizer_.state_slots(), std::vector<float>(owned_.shard_size(), 0.f));
  const size_t grad_size = options_.stage <= 1 ? num_params_ : owned_.shard_size();
  if (half()) grad16_.assign(grad_size, 0); else grad32_.assign(grad_size, 0.f);
  scratch_.resize(layers_.size());
  if (options_.overlap_comm && options_.stage <= 1 && comm_.size() > 1)
    worker_ = std::make_unique<CommWorker>();
  if (options_.stage > 0 && !half()) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      const auto& counts = owned_.LayerCounts(static_cast<int>(l));
      layer_gather_.push_back(comm_.MakePersistentAllGather(counts));
      if (options_.stage >= 2) layer_scatter_.push_back(comm_.MakePersistentReduceScatter(counts));
    }
  }
}

ZeroEngine::~ZeroEngine() = default;

float* ZeroEngine::MasterPtr(const Segment& s) {
  return alias_master_ ? compute32_.data() + s.flat_offset : master_.data() + s.shard_offset;
}
const float* ZeroEngine::MasterPtr(const Segment& s) const {
  return alias_master_ ? compute32_.data() + s.flat_offset : master_.data() + s.shard_offset;
}

void ZeroEngine::InitParams(uint64_t seed) {
  std::vector<float> full(num_params_);
  model_.Init(full.data(), seed);
  for (const Segment& s : owned_.owned())
    std::memcpy(MasterPtr(s), full.data() + s.flat_offset, s.len * sizeof(float));
  if (options_.stage < 3) {
    if (half()) ToHalf16(full.data(), compute16_.data(), num_params_, options_.precision);
    else compute32_ = full;  // also the master weights (aliased)
  }
  for (auto& st : state_) std::fill(st.begin(), st.end(), 0.f);
  applied_steps_ = 0;
  ZeroGrads();
}

// --- parameters -------------------------------------------------------------

void ZeroEngine::GatherLayer(int layer, const float* own_master_piece, float* out) {
  const Segment& seg = owned_.Owned(layer);
  const auto& counts = owned_.LayerCounts(layer);
  const size_t size = layers_[layer].size();
  if (!half()) {
    layer_gather_[layer]->Run(own_master_piece, out);
    return;
  }
  std::vector<uint16_t> send(seg.len), recv(size);
  ToHalf16(own_master_piece, send.data(), seg.len, options_.precision);
  comm_.AllGather(send.data(), recv.data(), counts);
  FromHalf16(recv.data(), out, size, options_.precision);
}

const float* ZeroEngine::Acquire(int layer) {
  const LayerShape& shape = layers_[layer];
  if (options_.stage < 3 && !half()) return compute32_.data() + shape.offset;
  std::vector<float>& buf = scratch_[layer];
  if (!buf.empty()) return buf.data();
  buf.resize(shape.size());
  if (options_.stage < 3) {
    FromHalf16(compute16_.data() + shape.offset, buf.data(), shape.size(), options_.precision);
  } else {
    GatherLayer(layer, MasterPtr(owned_.Owned(layer)), buf.data());
  }
  return buf.data();
}

void ZeroEngine::Release(int layer) {
  if (options_.stage < 3 && !half()) return;
  std::vector<float>().swap(scratch_[layer]);  // freed, not just cleared
}

// --- gradients ---------------------------------------------------------------

void ZeroEngine::AllReduceGrads(size_t lo, size_t hi) {
  if (hi <= lo || comm_.size() == 1) return;
  auto reduce = [this, lo, hi] {
    if (half()) {
      comm_.AllReduceSum(grad16_.data() + lo, hi - lo, FormatOf(options_.precision));
      return;
    }
    // The same buckets come back every step: set each up once.
    std::unique_ptr<PersistentAllReduce>& op = bucket_reduce_[{lo, hi}];
    if (!op) op = comm_.MakePersistentAllReduce(grad32_.data() + lo, hi - lo);
    op->Run();
  };
  // overlap_comm: the bucket [lo, hi) is final; backward goes on below lo.
  if (worker_) worker_->Post(reduce); else reduce();
}

// Stages 0/1 in fp32, first micro-batch after a step: the model writes this
// layer's gradient straight into grad32_ (zeroed here, while the layer is
// about to be hot in cache) instead of into its scratch buffer followed by a
// copy. Bit-identical: OpenBLAS with beta = 0 also zero-fills C before it
// accumulates. Later micro-batches keep the scratch + add path, so the
// rounding of gradient accumulation is unchanged.
float* ZeroEngine::AccumulateInto(int layer) {
  if (options_.stage > 1 || half() || !grads_empty_) return nullptr;
  const LayerShape& shape = layers_[layer];
  float* g = grad32_.data() + shape.offset;
  std::memset(g, 0, shape.size() * sizeof(float));
  return g;
}

void ZeroEngine::LayerGrad(int layer, const float* grad, size_t n) {
  const LayerShape& shape = layers_[layer];
  DS_CHECK(n == shape.size());
  if (options_.stage <= 1) {
    if (half()) {
      if (grads_empty_) ToHalf16(grad, grad16_.data() + shape.offset, n, options_.precision);
      else Accumulate16(grad16_.data() + shape.offset, grad, n, options_.precision);
    } else {
      float* g = grad32_.data() + shape.offset;
      if (grad == g) {
        // AccumulateInto: already in place.
      } else if (grads_empty_) std::memcpy(g, grad, n * sizeof(float));
      else for (size_t i = 0; i < n; ++i) g[i] += grad[i];
    }
    if (last_micro_ && pending_hi_ - shape.offset >= options_.reduce_bucket_size) {
      AllReduceGrads(shape.offset, pending_hi_);
      pending_hi_ = shape.offset;
    }
    return;
  }
  // Stages 2, 3: reduce-scatter this layer now, keep only the owned piece.
  const Segment& seg = owned_.Owned(layer);
  const auto& counts = owned_.LayerCounts(layer);
  if (half()) {
    std::vector<uint16_t> buf(n), piece(seg.len);
    ToHalf16(grad, buf.data(), n, options_.precision);
    comm_.ReduceScatter(buf.data(), piece.data(), counts, FormatOf(options_.precision));
    if (grads_empty_) {
      std::memcpy(grad16_.data() + seg.shard_offset, piece.data(), seg.len * sizeof(uint16_t));
    } else {
      std::vector<float> f(seg.len);
      FromHalf16(piece.data(), f.data(), seg.len, options_.precision);
      Accumulate16(grad16_.data() + seg.shard_offset, f.data(), seg.len, options_.precision);
    }
  } else {
    float* g = grad32_.data() + seg.shard_offset;
    if (grads_empty_) {
      layer_scatter_[layer]->Run(grad, g);
    } else {
      std::vector<float> piece(seg.len);
      layer_scatter_[layer]->Run(grad, piece.data());
      for (size_t i = 0; i < seg.len; ++i) g[i] += piece[i];
    }
  }
}

const float* ZeroEngine::GradAsFloat(const Segment& s, std::vector<float>* tmp) const {
  const size_t at = options_.stage <= 1 ? s.flat_offset : s.shard_offset;
  if (!half()) return grad32_.data() + at;
  tmp->resize(s.len);
  FromHalf16(grad16_.data() + at, tmp->data(), s.len, options_.precision);
  return tmp->data();
}

void ZeroEngine::ZeroGrads() { grads_empty_ = true; }

BatchStats ZeroEngine::MicroBatch(const float* x, const int32_t* y, int batch,
                                  int64_t global_batch, bool last) {
  last_micro_ = last;
  pending_hi_ = num_params_;
  const double scale = options_.precision == Precision::kFp16 ? scaler_.scale() : 1.0;
  BatchStats stats = model_.ForwardBackward(*this, x, y, batch,
                                            static_cast<float>(scale / global_batch), *this);
  if (last && options_.stage <= 1) {
    AllReduceGrads(0, pending_hi_);
    if (worker_) worker_->Wait();  // rethrows a CommError from the worker
  }
  last_micro_ = false;
  grads_empty_ = false;
  return stats;
}

// --- the optimizer step ----------------------------------------------------------

StepResult ZeroEngine::Step(float lr) {
  // The global gradient norm (clipping, metrics) and overflow (fp16): one
  // pass over the owned partition; inf/nan anywhere makes the sum non-finite.
  std::vector<float> g;
  double sumsq = 0;
  if (NeedsGradNorm(options_)) {
    for (const Segment& s : owned_.owned()) sumsq += SumOfSquares(GradAsFloat(s, &g), s.len);
    if (options_.stage > 0) comm_.AllReduceSum(&sumsq, 1);
  }
  StepResult result;
  const float factor = DecideStep(options_, scaler_, sumsq, &result);
  if (result.skipped) {
    ZeroGrads();
    return result;
  }
  ++applied_steps_;
  std::vector<float*> st(state_.size());
  for (const Segment& s : owned_.owned()) {
    for (size_t k = 0; k < state_.size(); ++k) st[k] = state_[k].data() + s.shard_offset;
    optimizer_.Step(MasterPtr(s), GradAsFloat(s, &g), st.data(), s.len, applied_steps_, lr, factor);
    if (options_.stage < 3 && half())
      ToHalf16(MasterPtr(s), compute16_.data() + s.flat_offset, s.len, options_.precision);
  }
  // Stages 1, 2: every rank needs every layer's new compute params.
  if (options_.stage == 1 || options_.stage == 2) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      const Segment& s = owned_.Owned(static_cast<int>(l));
      const auto& counts = owned_.LayerCounts(static_cast<int>(l));
      if (half()) {
        std::vector<uint16_t> send(compute16_.begin() + s.flat_offset,
                                   compute16_.begin() + s.flat_offset + s.len);
        comm_.AllGather(send.data(), compute16_.data() + layers_[l].offset, counts);
      } else {
        layer_gather_[l]->Run(compute32_.data() + s.flat_offset,
                              compute32_.data() + layers_[l].offset);
      }
    }
  }
  ZeroGrads();
  return result;
}

}  // namespace ds::rt
