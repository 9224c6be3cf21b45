// DeviceZeroEngine: the Engine (engine.h) on a GPU. The same ZeRO stages
// 0-3 as the CPU ZeroEngine, over the same ZeroPartition, with the same
// Optimizer::Plan and the same checkpoint shards, but every parameter,
// gradient and optimizer state in device memory:
//
//   compute copy  stage < 3: the full flat vector in the compute format
//                 (fp32 stage 0-2: also the master weights, as on the CPU);
//                 stage 3: each layer all-gathered into a stream-ordered
//                 buffer and freed after use; the next layer's gather is
//                 queued before the current layer's products (prefetch), and
//                 the compute stream waits for that gather's own event, not
//                 for the gradient reductions queued behind it
//   master        fp32, this rank's owned segments (unless aliased)
//   state         fp32, optimizer slots x the owned shard
//   gradients     compute format; stage 0/1 the full vector, reduced in
//                 buckets of reduce_bucket_size on the communication stream
//                 while backward goes on (events, no host waits); stage 2/3
//                 only the owned shard, each layer reduce-scattered as soon
//                 as backward has produced it
//
// ZeRO-3's gathers and stage 2/3's reduce-scatters run on DeepSpeed's padded
// partition (zero_partition.h: every piece ceil(size / world) elements), so
// NCCL's equal-count collectives take the buffers as they are; the owned
// gradients sit in a shard of padded pieces. Master weights, states and
// checkpoints keep the unpadded shard. Stage 1/2's all-gather of the new
// compute copy, once per step, still goes through the uneven path (its
// target is the unpadded flat vector).
//
// The step runs the norm/overflow check (GradSumOfSquares), DecideStep and
// one multi-tensor optimizer launch that also writes the 16-bit copy; then
// stages 1 and 2 all-gather the new compute copy.
//
// offload_optimizer (DeepSpeed's offload_optimizer.device: cpu): the fp32
// master weights and the optimizer state live in pinned host memory and the
// step runs on the host (the CPU path's vectorized Optimizer::Step), chunk
// by chunk as the gradients come down, each chunk's new parameters going up
// in the compute format while the next one is stepped (two copy streams).
// The GPU keeps the compute copy only (stage 3: this rank's shard of it).
//
// The host waits for the GPU once per step that needs the gradient norm
// (clipping, fp16's overflow check) and once per TakeTrainStats (the
// trainer's steps_per_print), not per micro-batch: the trainer's batches
// (MicroBatchSamples on a resident data set) add their loss on the device,
// and the host queues up to kQueuedBatches of them ahead. Every wait is
// bounded by the collective timeout (DeviceComm::Synchronize, WaitEvent).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "runtime/device/buffer.h"
#include "runtime/device/device_comm.h"
#include "runtime/device/device_mlp.h"
#include "runtime/device/kernels.h"
#include "runtime/engine/engine.h"
#include "runtime/model/optimizer.h"

namespace ds::rt::dev {

class DeviceZeroEngine final : public Engine, private DeviceParamSource, private DeviceGradSink {
 public:
  // `model` gives the shapes; `comm` carries the collectives. All must
  // outlive the engine. allow_tf32: fp32 products on TF32 tensor cores.
  // gpu_sharing: ranks on this GPU (the hybrid mode), whose copies of a
  // data set must all fit.
  DeviceZeroEngine(const Mlp& model, DeviceComm& comm, const Optimizer& optimizer,
                   const ZeroOptions& options, bool allow_tf32, int gpu_sharing = 1);
  ~DeviceZeroEngine() override;

  void InitParams(uint64_t seed) override;
  BatchStats MicroBatch(const float* x, const int32_t* y, int batch, int64_t global_batch,
                        bool last) override;
  // The data set is copied to GPU memory on first use and each batch
  // gathered there: no per-step upload. It is resident only where the
  // copies of every rank on the GPU fit in half of what is free, decided by
  // all ranks together (collective: one answer, measured before anyone
  // allocates).
  void MicroBatchSamples(const Dataset& data, const int64_t* indices, int batch, int64_t global_batch,
                         bool last) override;
  BatchStats TakeTrainStats() override;
  StepResult Step(float lr) override;
  BatchStats EvaluateRange(const Dataset& test, int64_t lo, int64_t hi) override;
  std::vector<float> GatherComputeParams() override;
  std::vector<float> GatherMasterParams() override;
  MemoryReport Memory() const override;
  int64_t applied_steps() const override { return applied_steps_; }
  LossScaler& loss_scaler() override { return scaler_; }
  void ExportShardInto(ShardState* out) const override;
  void ImportFull(const std::vector<float>& master, const std::vector<std::vector<float>>& state,
                  int64_t applied_steps) override;

 private:
  const void* Acquire(int layer) override;
  void Release(int layer) override;
  void Prefetch(int layer) override;
  Target GradTarget(int layer) override;
  void LayerGrad(int layer) override;

  // Element i of a buffer in the compute format.
  void* ComputeAt(void* base, size_t i) const { return static_cast<uint8_t*>(base) + i * esize_; }
  void ZeroTail(void* p, size_t from, size_t to, cudaStream_t s) const;
  // Where layer l's owned gradient starts in grads_.
  size_t GradOffset(int layer) const;
  float* MasterAt(const Segment& s);
  // Layer l's full parameters gathered from the owned master pieces into
  // `out` (compute format), queued after the compute stream's work; the
  // compute stream waits for gathered_done_[l] before reading them.
  void GatherLayer(int layer, void* out);
  // The full compute copy: compute_ (stage < 3) or every layer gathered
  // into *gathered (stage 3, collective), queued on the compute stream.
  const void* FullCompute(DeviceBuffer<uint8_t>* gathered);
  // Loads full fp32 master weights and states (host) into this rank's pieces.
  void Load(const std::vector<float>& master, const std::vector<std::vector<float>>* state);
  void AllReduceGrads(size_t lo, size_t hi);
  // offload_optimizer: the step on the host (see above).
  void StepOnHost(float lr, float factor);
  // The owned master weights and states as host vectors in shard layout.
  std::vector<float> OwnedMaster() const;
  std::vector<std::vector<float>> OwnedState() const;
  // One micro-batch of `batch` samples around `forward_backward(grad_scale)`.
  template <typename Fn>
  void Micro(int batch, int64_t global_batch, bool last, Fn forward_backward);
  // A data set in GPU memory, or nullptr when it does not fit.
  struct Resident {
    DeviceBuffer<float> x;
    DeviceBuffer<int32_t> y;
  };
  const Resident* ResidentOf(const Dataset& data);
  // Samples indices[0..batch) of resident `data` into the model's input.
  void Gather(const Resident& data, int features, const int64_t* indices, int batch);
  cudaStream_t compute() const { return stream_.get(); }
  bool half() const { return options_.precision != Precision::kFp32; }

  const Mlp& model_;
  DeviceComm& comm_;
  const Optimizer& optimizer_;
  const ZeroOptions options_;
  const Precision fmt_;
  const size_t esize_;
  const std::vector<LayerShape> layers_;
  const ZeroPartition owned_;  // what this rank updates (world 1 for stage 0)
  const ZeroPartition saved_;  // N-way partition used for checkpoints
  const size_t num_params_;
  const bool offload_;         // offload_optimizer: master, state and step on the host
  const bool alias_master_;    // fp32, stage < 3, no offload: master = compute copy
  const int gpu_sharing_;      // ranks on this GPU
  LossScaler scaler_;
  int64_t applied_steps_ = 0;

  Stream stream_;
  DeviceMlp mlp_;
  DeviceBuffer<uint8_t> compute_;             // stage < 3
  DeviceBuffer<float> master_;                // owned shard, unless aliased
  std::vector<DeviceBuffer<float>> state_;    // optimizer slots x owned shard
  DeviceBuffer<uint8_t> grads_;               // stage 0/1 full, 2/3 owned shard
  DeviceBuffer<UpdateSegment> segments_;      // the owned segments, for the step
  size_t max_segment_ = 0;
  DeviceBuffer<double> norm_scratch_, sumsq_;
  PinnedBuffer<double> sumsq_host_;
  // offload_optimizer: pinned host master, state, gradients coming down and
  // parameters going up (shard layout); the stage-3 shard of the compute
  // copy on the device; the step's chunks and their download events.
  struct Chunk {
    size_t shard = 0, grad = 0, flat = 0, len = 0;
  };
  PinnedBuffer<float> master_host_;
  std::vector<PinnedBuffer<float>> state_host_;
  PinnedBuffer<uint8_t> grad_host_, param_host_;
  std::vector<float> grad32_;
  DeviceBuffer<uint8_t> owned_params_;
  std::vector<Chunk> chunks_;
  std::deque<Event> chunk_down_;
  Stream down_, up_;
  Event step_ready_, params_up_;
  std::map<const Dataset*, Resident> resident_;
  DeviceBuffer<int64_t> index_;
  // MicroBatchSamples' batches in flight: each one's indices (pinned) and
  // the end of its work on the compute stream, in a ring.
  static constexpr size_t kQueuedBatches = 2;
  PinnedBuffer<int64_t> index_host_[kQueuedBatches];
  Event queued_done_[kQueuedBatches];
  size_t queued_ = 0;  // batches queued so far
  int largest_batch_ = 0;
  std::map<int, void*> gathered_;             // stage 3: layers between Prefetch/Acquire and Release
  std::vector<Event> gathered_done_;          // stage 3: per layer, the end of its last gather
  std::map<int, void*> layer_grads_;          // stage 2/3: between GradTarget and LayerGrad
  bool grads_empty_ = true;                   // next micro-batch assigns instead of adding
  bool last_micro_ = false;
  size_t pending_hi_ = 0;                     // stage 0/1: grads [x, pending_hi_) not reduced
};

}  // namespace ds::rt::dev
