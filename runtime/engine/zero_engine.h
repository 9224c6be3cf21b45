// ZeroEngine: the CPU Engine (engine.h): data-parallel training of an Mlp
// with ZeRO stages 0-3 over a Communicator. It owns every parameter,
// gradient and optimizer-state buffer of this rank and is the model's
// ParamSource and GradSink.
//
//   stage 0: full params, full grads (bucketed allreduce during the last
//            micro-batch's backward), full optimizer state on every rank.
//   stage 1: optimizer state (and fp32 master weights) partitioned: each rank
//            updates its piece of every layer, then params are all-gathered.
//   stage 2: + gradients reduce-scattered per layer to their owner during
//            every micro-batch's backward; only the owned piece is kept.
//   stage 3: + parameters partitioned: a layer is all-gathered just before
//            the model uses it (forward and backward) and freed after.
//
// Mixed precision (fp16/bf16): compute params and grads are 16-bit, the
// optimizer updates fp32 master weights; fp16 uses the dynamic loss scaler
// and a global overflow check skips the step. Gradient clipping uses the
// global L2 norm across all partitions. Collective calls throw CommError.
// Not thread-safe; every rank must call the same methods in the same order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/comm/comm_worker.h"
#include "runtime/comm/communicator.h"
#include "runtime/engine/engine.h"
#include "runtime/numeric/half.h"
#include "runtime/model/loss_scaler.h"
#include "runtime/model/model.h"
#include "runtime/model/optimizer.h"
#include "runtime/engine/zero_partition.h"

namespace ds::rt {

class ZeroEngine : public Engine, private ParamSource, private GradSink {
 public:
  ZeroEngine(Mlp& model, Communicator& comm, const Optimizer& optimizer,
             const ZeroOptions& options);
  ~ZeroEngine() override;

  void InitParams(uint64_t seed) override;
  BatchStats MicroBatch(const float* x, const int32_t* y, int batch, int64_t global_batch,
                        bool last) override;
  StepResult Step(float lr) override;
  BatchStats EvaluateRange(const Dataset& test, int64_t lo, int64_t hi) override;
  std::vector<float> GatherComputeParams() override;
  std::vector<float> GatherMasterParams() override;
  MemoryReport Memory() const override;
  int64_t applied_steps() const override { return applied_steps_; }
  LossScaler& loss_scaler() override { return scaler_; }
  const ZeroOptions& options() const { return options_; }
  // Snapshots, taken often, reuse `out`'s buffers: no page faults after the first.
  void ExportShardInto(ShardState* out) const override;
  void ImportFull(const std::vector<float>& master, const std::vector<std::vector<float>>& state,
                  int64_t applied_steps) override;

 private:
  const float* Acquire(int layer) override;
  void Release(int layer) override;
  void LayerGrad(int layer, const float* grad, size_t n) override;
  float* AccumulateInto(int layer) override;

  float* MasterPtr(const Segment& s);
  const float* MasterPtr(const Segment& s) const;
  // An owned segment's gradients as fp32: in place (fp32) or converted into *tmp.
  const float* GradAsFloat(const Segment& s, std::vector<float>* tmp) const;
  void AllReduceGrads(size_t lo, size_t hi);
  void GatherLayer(int layer, const float* own_master_piece, float* out);
  void ZeroGrads();
  bool half() const { return options_.precision != Precision::kFp32; }

  Mlp& model_;
  Communicator& comm_;
  const Optimizer& optimizer_;
  ZeroOptions options_;
  std::vector<LayerShape> layers_;
  ZeroPartition owned_;    // what this rank updates (world 1 for stage 0)
  ZeroPartition saved_;    // N-way partition used for checkpoints
  size_t num_params_;
  LossScaler scaler_;
  int64_t applied_steps_ = 0;

  bool alias_master_;                       // fp32 and stage < 3: master = compute32_
  std::vector<float> compute32_;            // stage < 3, fp32
  std::vector<uint16_t> compute16_;         // stage < 3, 16-bit
  std::vector<float> master_;               // owned shard, unless aliased
  std::vector<std::vector<float>> state_;   // optimizer slots x owned shard
  std::vector<float> grad32_;               // stage 0/1: full; 2/3: owned shard
  std::vector<uint16_t> grad16_;
  std::vector<std::vector<float>> scratch_;  // per layer: fp32 params while acquired
  bool grads_empty_ = true;                 // next micro-batch assigns instead of adding
  bool last_micro_ = false;
  size_t pending_hi_ = 0;                   // stage 0/1: grads [x, pending_hi_) not reduced
  // fp32 stages 0/1: one persistent allreduce per gradient bucket [lo, hi),
  // used by whichever thread reduces (the worker with overlap_comm).
  std::map<std::pair<size_t, size_t>, std::unique_ptr<PersistentAllReduce>> bucket_reduce_;
  // fp32: each layer's parameter all-gather (stages 1-3) and gradient
  // reduce-scatter (stages 2, 3).
  std::vector<std::unique_ptr<PersistentAllGather>> layer_gather_;
  std::vector<std::unique_ptr<PersistentReduceScatter>> layer_scatter_;
  std::unique_ptr<CommWorker> worker_;      // overlap_comm (stages 0, 1)
};

}  // namespace ds::rt
