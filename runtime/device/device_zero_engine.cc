// DeviceZeroEngine: the micro-batch and the step (device_zero_engine.h);
// parameters in and out, checkpoints and evaluation are in
// device_zero_engine_state.cc.
#include "runtime/device/device_zero_engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "common/log.h"

namespace ds::rt::dev {

DeviceZeroEngine::DeviceZeroEngine(const Mlp& model, DeviceComm& comm, const Optimizer& optimizer,
                                   const ZeroOptions& options, bool allow_tf32, int gpu_sharing)
    : model_(model),
      comm_(comm),
      optimizer_(optimizer),
      options_(options),
      fmt_(options.precision),
      esize_(ElementSize(options.precision)),
      layers_(LayersOf(model)),
      owned_(layers_, options.stage == 0 ? 1 : comm.size(), options.stage == 0 ? 0 : comm.rank()),
      saved_(layers_, comm.size(), comm.rank()),
      num_params_(model.num_params()),
      offload_(options.offload_optimizer),
      alias_master_(options.precision == Precision::kFp32 && options.stage < 3 && !options.offload_optimizer),
      gpu_sharing_(std::max(gpu_sharing, 1)),
      scaler_(options.loss_scaler),
      mlp_(model, options.precision, stream_.get(), allow_tf32,
           [&comm](cudaStream_t s) { comm.Synchronize(s); }),
      gathered_done_(options.stage == 3 ? layers_.size() : 0) {
  DS_CHECK(options.stage >= 0 && options.stage <= 3);
  KeepFreedMemoryInPool();  // stage 3's per-layer scratch is reused, not remapped, step after step
  const size_t shard = owned_.shard_size();
  if (options_.stage < 3) compute_.Resize(num_params_ * esize_);
  if (offload_) {
    master_host_.Resize(shard);
    state_host_.resize(optimizer_.state_slots());
    for (auto& s : state_host_) s.Resize(shard);
    grad_host_.Resize(shard * esize_);
    param_host_.Resize(shard * esize_);
    if (options_.stage == 3) owned_params_.Resize(shard * esize_);
  } else {
    if (!alias_master_) master_.Resize(shard);
    state_.resize(optimizer_.state_slots());
    for (auto& s : state_) s.Resize(shard);
  }
  grads_.Resize((options_.stage <= 1 ? num_params_ : owned_.padded_shard_size()) * esize_);
  std::vector<UpdateSegment> segs;
  for (const Segment& s : owned_.owned()) {
    const size_t grad = GradOffset(s.layer);
    segs.push_back({alias_master_ ? s.flat_offset : s.shard_offset, s.shard_offset, grad, s.flat_offset, s.len});
    max_segment_ = std::max(max_segment_, s.len);
    if (!offload_) continue;
    constexpr size_t kChunk = size_t{1} << 22;  // elements per host step chunk
    for (size_t at = 0; at < s.len; at += kChunk) {
      chunks_.push_back({s.shard_offset + at, grad + at, s.flat_offset + at, std::min(kChunk, s.len - at)});
      chunk_down_.emplace_back();
    }
  }
  if (offload_ && half()) grad32_.resize(std::min<size_t>(shard, size_t{1} << 22));
  segments_.Resize(segs.size());
  CopyToDevice(segments_.data(), segs.data(), segs.size(), compute());
  norm_scratch_.Resize(NormScratchSize(static_cast<int>(segs.size())));
  sumsq_.Resize(1);
  sumsq_host_.Resize(1);
  stream_.Synchronize();
}

DeviceZeroEngine::~DeviceZeroEngine() {
  // The buffers' cudaFree below waits for the whole device, which may still
  // run a collective whose peer is gone: wait here first, bounded by the
  // collective timeout (NCCL: a timeout or failure aborts the communicator,
  // which ends its kernels). An unusable communicator was aborted already.
  // The communication stream is joined first: the compute stream alone does
  // not wait for the last micro-batch's gradient reductions (Step does), nor
  // for a prefetched gather. Scratch still held after a failure mid-step is
  // given back after that join, in stream order.
  try {
    comm_.Join(compute());
    for (auto& [layer, p] : gathered_) FreeAsync(p, compute());
    for (auto& [layer, p] : layer_grads_) FreeAsync(p, compute());
    comm_.Synchronize(compute());
  } catch (const std::exception& e) {
    DS_LOG(Warn, Train) << "device engine: not waiting for the GPU at teardown: " << e.what();
  }
}

size_t DeviceZeroEngine::GradOffset(int layer) const {
  return options_.stage <= 1 ? owned_.Owned(layer).flat_offset : owned_.PaddedOffset(layer);
}

float* DeviceZeroEngine::MasterAt(const Segment& s) {
  return alias_master_ ? reinterpret_cast<float*>(compute_.data()) + s.flat_offset : master_.data() + s.shard_offset;
}

// --- parameters ------------------------------------------------------------

// Queued on the communication stream after the compute stream's work so far;
// gathered_done_[layer] marks its end there. `out` holds the padded
// partition (zero_partition.h): this rank's piece goes to its slot, padded
// with zeros, and NCCL gathers equal counts in place, with no copies.
void DeviceZeroEngine::GatherLayer(int layer, void* out) {
  const Segment& seg = owned_.Owned(layer);
  const size_t stride = owned_.Stride(layer);
  void* mine = ComputeAt(out, owned_.rank() * stride);
  if (offload_)
    DS_CUDA(cudaMemcpyAsync(mine, ComputeAt(owned_params_.data(), seg.shard_offset), seg.len * esize_,
                            cudaMemcpyDeviceToDevice, compute()));
  else
    Cast(MasterAt(seg), Precision::kFp32, mine, fmt_, seg.len, compute());
  ZeroTail(mine, seg.len, stride, compute());
  comm_.AllGather(mine, out, owned_.PaddedCounts(layer), fmt_, compute());
  gathered_done_[layer].Record(comm_.stream());
}

// Elements [from, to) of `p` (compute format) set to zero, on `s`.
void DeviceZeroEngine::ZeroTail(void* p, size_t from, size_t to, cudaStream_t s) const {
  if (to > from) DS_CUDA(cudaMemsetAsync(ComputeAt(p, from), 0, (to - from) * esize_, s));
}

void DeviceZeroEngine::Prefetch(int layer) {
  if (options_.stage < 3 || gathered_.count(layer)) return;
  void* p = AllocAsync(owned_.Stride(layer) * owned_.world() * esize_, compute());
  gathered_[layer] = p;  // listed before the gather: the destructor frees it after a throw
  GatherLayer(layer, p);
}

// The compute stream waits for this layer's gather only, not for the
// gradient reductions queued on the communication stream after it.
const void* DeviceZeroEngine::Acquire(int layer) {
  if (options_.stage < 3) return ComputeAt(compute_.data(), layers_[layer].offset);
  Prefetch(layer);  // unless already under way
  gathered_done_[layer].MakeWait(compute());
  return gathered_.at(layer);
}

void DeviceZeroEngine::Release(int layer) {
  if (options_.stage < 3) return;
  auto it = gathered_.find(layer);
  if (it == gathered_.end()) return;
  FreeAsync(it->second, compute());
  gathered_.erase(it);
}

// --- gradients ---------------------------------------------------------------

void DeviceZeroEngine::AllReduceGrads(size_t lo, size_t hi) {
  if (hi <= lo || comm_.size() == 1) return;
  comm_.AllReduceSum(ComputeAt(grads_.data(), lo), hi - lo, fmt_, compute());
}

DeviceGradSink::Target DeviceZeroEngine::GradTarget(int layer) {
  const LayerShape& shape = layers_[layer];
  if (options_.stage <= 1) return {ComputeAt(grads_.data(), shape.offset), !grads_empty_};
  // The padded partition: the layer, then zeros to world x stride.
  const size_t padded = owned_.Stride(layer) * owned_.world();
  void* p = AllocAsync(padded * esize_, compute());
  layer_grads_[layer] = p;
  ZeroTail(p, shape.size(), padded, compute());
  return {p, false};
}

void DeviceZeroEngine::LayerGrad(int layer) {
  const LayerShape& shape = layers_[layer];
  if (options_.stage <= 1) {
    if (last_micro_ && pending_hi_ - shape.offset >= options_.reduce_bucket_size) {
      AllReduceGrads(shape.offset, pending_hi_);
      pending_hi_ = shape.offset;
    }
    return;
  }
  // Stages 2, 3: reduce-scatter the layer now (on the communication stream,
  // after its gradient), keep the owned piece, free the full gradient there.
  // Both in the padded partition: equal counts, no copies; the piece's
  // padding receives a sum of zeros.
  void* full = layer_grads_.at(layer);  // listed until freed: the destructor frees it after a throw
  const size_t stride = owned_.Stride(layer);
  void* mine = ComputeAt(grads_.data(), owned_.PaddedOffset(layer));
  if (grads_empty_) {
    comm_.ReduceScatter(full, mine, owned_.PaddedCounts(layer), fmt_, compute());
  } else {
    void* piece = AllocAsync(stride * esize_, comm_.stream());
    comm_.ReduceScatter(full, piece, owned_.PaddedCounts(layer), fmt_, compute());
    Accumulate(mine, fmt_, piece, fmt_, owned_.Owned(layer).len, comm_.stream());
    FreeAsync(piece, comm_.stream());
  }
  FreeAsync(full, comm_.stream());
  layer_grads_.erase(layer);
}

template <typename Fn>
void DeviceZeroEngine::Micro(int batch, int64_t global_batch, bool last, Fn forward_backward) {
  // The next micro-batch's backward writes the gradients the last one's
  // collectives may still read (stage 2/3 accumulation): wait for them.
  comm_.Join(compute());
  // A batch larger than any before grows the model's scratch, and freeing
  // the old buffers waits for the whole device without a bound: wait for
  // it here first (the compute stream, which now waits for every collective
  // queued), bounded; once per size, in practice the first batch.
  if (batch > largest_batch_) {
    comm_.Synchronize(compute());
    largest_batch_ = batch;
  }
  last_micro_ = last;
  pending_hi_ = num_params_;
  const double scale = options_.precision == Precision::kFp16 ? scaler_.scale() : 1.0;
  forward_backward(static_cast<float>(scale / global_batch));
  if (last && options_.stage <= 1) AllReduceGrads(0, pending_hi_);
  last_micro_ = false;
  grads_empty_ = false;
}

BatchStats DeviceZeroEngine::MicroBatch(const float* x, const int32_t* y, int batch, int64_t global_batch,
                                        bool last) {
  BatchStats stats;
  Micro(batch, global_batch, last,
        [&](float gs) { stats = mlp_.ForwardBackward(*this, x, y, batch, gs, *this); });
  return stats;
}

// Queued without a host wait: the host runs ahead of the GPU by up to
// kQueuedBatches micro-batches. The bound frees the pinned index buffer the
// next batch reuses, and keeps the host from queueing without end: a full
// launch queue blocks the host inside CUDA, where no deadline reaches (one
// micro-batch's launches, about 15 per layer, still must fit: a model of
// hundreds of layers would need a bound per layer instead).
void DeviceZeroEngine::MicroBatchSamples(const Dataset& data, const int64_t* indices, int batch,
                                         int64_t global_batch, bool last) {
  const Resident* resident = ResidentOf(data);
  if (resident == nullptr) return Engine::MicroBatchSamples(data, indices, batch, global_batch, last);
  const size_t slot = queued_ % kQueuedBatches;
  if (queued_ >= kQueuedBatches) comm_.WaitEvent(queued_done_[slot].get());
  Micro(batch, global_batch, last, [&](float gs) {
    Gather(*resident, data.features, indices, batch);
    mlp_.QueueForwardBackward(*this, batch, gs, *this);
  });
  queued_done_[slot].Record(compute());
  ++queued_;
}

BatchStats DeviceZeroEngine::TakeTrainStats() {
  BatchStats stats = Engine::TakeTrainStats();  // batches of a data set that is not resident
  stats += mlp_.TakeTrainStats();
  return stats;
}

const DeviceZeroEngine::Resident* DeviceZeroEngine::ResidentOf(const Dataset& data) {
  auto it = resident_.find(&data);
  if (it != resident_.end()) return it->second.x.size() > 0 ? &it->second : nullptr;
  Resident& r = resident_[&data];
  // Every rank measures before any allocates (the allreduce orders it), each
  // counts the copies of all the ranks on its GPU, and the data set is
  // resident only where no rank says it does not fit: one answer for all.
  // The stream's collectives finish first, bounded: the copies from pageable
  // memory below may block the host until the stream gets to them.
  comm_.Synchronize(compute());
  size_t free = 0, total = 0;
  DS_CUDA(cudaMemGetInfo(&free, &total));
  const size_t need = data.x.size() * sizeof(float) + data.y.size() * sizeof(int32_t);
  double refusals = need * 2 * static_cast<size_t>(gpu_sharing_) > free ? 1 : 0;
  if (comm_.size() > 1) {
    DeviceBuffer<double> vote(1);
    CopyToDevice(vote.data(), &refusals, 1, compute());
    comm_.AllReduceSum(vote.data(), 1, compute());
    comm_.Join(compute());
    comm_.Synchronize(compute());
    CopyToHost(&refusals, vote.data(), 1, compute());
    stream_.Synchronize();
  }
  if (refusals > 0) return nullptr;
  r.x.Resize(data.x.size());
  r.y.Resize(data.y.size());
  CopyToDevice(r.x.data(), data.x.data(), data.x.size(), compute());
  CopyToDevice(r.y.data(), data.y.data(), data.y.size(), compute());
  comm_.Synchronize(compute());  // done with the pageable sources; bounded, as the stream may wait on collectives
  return &r;
}

// The indices go through pinned memory, one buffer per queued batch: the
// copy from this one, kQueuedBatches batches ago, is done (MicroBatchSamples
// waited for it; evaluation waits for each batch).
void DeviceZeroEngine::Gather(const Resident& data, int features, const int64_t* indices, int batch) {
  PinnedBuffer<int64_t>& staging = index_host_[queued_ % kQueuedBatches];
  std::copy(indices, indices + batch, staging.Reserve(batch));
  CopyToDevice(index_.Reserve(batch), staging.data(), batch, compute());
  const DeviceMlp::Input in = mlp_.PrepareInput(batch);
  GatherRows(data.x.data(), data.y.data(), index_.data(), batch, features, in.x, fmt_, in.y, compute());
}

// --- the optimizer step --------------------------------------------------------

// Every chunk's gradients are queued to come down at once (down_); the host
// steps each as soon as it has arrived and sends its new parameters up in
// the compute format (up_) while the next chunk is stepped. Both copy
// streams start after the gradients are final; the compute stream resumes
// after the last upload.
void DeviceZeroEngine::StepOnHost(float lr, float factor) {
  step_ready_.Record(compute());
  step_ready_.MakeWait(down_.get());
  step_ready_.MakeWait(up_.get());
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const Chunk& k = chunks_[c];
    CopyToHost(grad_host_.data() + k.shard * esize_, static_cast<const uint8_t*>(grads_.data()) + k.grad * esize_,
               k.len * esize_, down_.get());
    chunk_down_[c].Record(down_.get());
  }
  // The gradients' last reduction may still be queued: wait for it here,
  // bounded and watching the communicator, so the per-chunk waits below are
  // only copies.
  comm_.Synchronize(compute());
  std::vector<float*> st(state_host_.size());
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const Chunk& k = chunks_[c];
    chunk_down_[c].Synchronize();
    const uint8_t* g = grad_host_.data() + k.shard * esize_;
    const float* grad = reinterpret_cast<const float*>(g);
    if (half()) {
      FromHalf16(reinterpret_cast<const uint16_t*>(g), grad32_.data(), k.len, fmt_);
      grad = grad32_.data();
    }
    for (size_t i = 0; i < st.size(); ++i) st[i] = state_host_[i].data() + k.shard;
    float* master = master_host_.data() + k.shard;
    optimizer_.Step(master, grad, st.data(), k.len, applied_steps_, lr, factor);
    uint8_t* out = param_host_.data() + k.shard * esize_;
    if (half()) ToHalf16(master, reinterpret_cast<uint16_t*>(out), k.len, fmt_);
    else std::memcpy(out, master, k.len * sizeof(float));
    void* to = options_.stage < 3 ? ComputeAt(compute_.data(), k.flat) : ComputeAt(owned_params_.data(), k.shard);
    CopyToDevice(static_cast<uint8_t*>(to), out, k.len * esize_, up_.get());
  }
  params_up_.Record(up_.get());
  params_up_.MakeWait(compute());
}

StepResult DeviceZeroEngine::Step(float lr) {
  comm_.Join(compute());  // every gradient reduction is done before the norm and the update
  const int count = static_cast<int>(owned_.owned().size());
  double sumsq = 0;
  if (NeedsGradNorm(options_)) {
    GradSumOfSquares(segments_.data(), count, grads_.data(), fmt_, norm_scratch_.data(), sumsq_.data(),
                     compute());
    if (options_.stage > 0) {
      comm_.AllReduceSum(sumsq_.data(), 1, compute());
      comm_.Join(compute());
    }
    CopyToHost(sumsq_host_.data(), sumsq_.data(), 1, compute());
    comm_.Synchronize(compute());
    sumsq = sumsq_host_[0];
  }
  StepResult result;
  const float factor = DecideStep(options_, scaler_, sumsq, &result);
  if (result.skipped) {
    grads_empty_ = true;
    return result;
  }
  ++applied_steps_;
  if (offload_) {
    StepOnHost(lr, factor);
  } else {
    const bool copy16 = half() && options_.stage < 3;
    OptimizerUpdate(optimizer_.Plan(applied_steps_, lr, factor), segments_.data(), count, max_segment_,
                    alias_master_ ? reinterpret_cast<float*>(compute_.data()) : master_.data(),
                    state_.empty() ? nullptr : state_[0].data(), state_.size() < 2 ? nullptr : state_[1].data(),
                    grads_.data(), fmt_, copy16 ? compute_.data() : nullptr, fmt_, compute());
  }
  // Stages 1, 2: every rank needs every layer's new compute copy.
  if (options_.stage == 1 || options_.stage == 2) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      const Segment& s = owned_.Owned(static_cast<int>(l));
      comm_.AllGather(ComputeAt(compute_.data(), s.flat_offset), ComputeAt(compute_.data(), layers_[l].offset),
                      owned_.LayerCounts(static_cast<int>(l)), fmt_, compute());
    }
    comm_.Join(compute());
  }
  grads_empty_ = true;
  return result;
}

}  // namespace ds::rt::dev
