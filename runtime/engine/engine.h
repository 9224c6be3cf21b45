// Engine: what the trainer drives each step, on the CPU (ZeroEngine) or on a
// GPU (dev::DeviceZeroEngine, CUDA builds). Both implement ZeRO stages 0-3
// over the same ZeroPartition, the same Optimizer::Plan and the same
// checkpoint shards (ShardState), so a checkpoint written by one resumes on
// the other. Not thread-safe; every rank must call the same methods in the
// same order (most are collective). Collective failures throw CommError.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/check.h"

#include "runtime/model/data.h"
#include "runtime/model/loss_scaler.h"
#include "runtime/numeric/half.h"
#include "runtime/model/model.h"
#include "runtime/engine/zero_partition.h"

namespace ds::rt {

struct ZeroOptions {
  int stage = 0;                             // 0..3
  Precision precision = Precision::kFp32;    // compute params and grads
  size_t reduce_bucket_size = 500'000'000;   // elements per gradient allreduce (stages 0, 1)
  bool overlap_comm = false;                 // stages 0, 1: reduce buckets on a background
                                             // thread while backward continues
  double gradient_clipping = 0;              // max global L2 norm; 0 = off
  LossScalerConfig loss_scaler;              // used when precision == kFp16
  bool offload_optimizer = false;            // device engine: master weights, optimizer state
                                             // and the step on the host (offload_optimizer.
                                             // device: cpu); the CPU engine is there already
};

struct StepResult {
  bool skipped = false;    // overflow (inf/nan gradients): parameters unchanged
  double grad_norm = 0;    // global L2 norm of the unscaled gradients, before clipping
                           // (computed only with clipping or fp16; 0 otherwise)
  double loss_scale = 1;   // the scale the gradients carried
};

// Bytes this rank keeps allocated between steps (transient per-layer buffers
// excluded), and the ZeRO paper's figure for this precision and optimizer.
struct MemoryReport {
  size_t params = 0;      // compute parameters (16-bit or fp32 copies)
  size_t grads = 0;       // gradient buffers
  size_t optimizer = 0;   // fp32 master weights (when separate) + optimizer states
  size_t total() const { return params + grads + optimizer; }
  double formula = 0;     // mixed-precision Adam: 16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N
};

// The ZeRO paper's per-rank bytes for Ψ parameters on N ranks at `stage`:
// b bytes per compute parameter and gradient (2 in 16-bit, 4 in fp32) and
// K bytes of optimizer state per parameter (4 per slot, + 4 for separate
// fp32 master weights in 16-bit).
double ZeroMemoryFormula(int stage, bool half, int state_slots, double psi, int n);

// A rank's piece of the training state for checkpoints: the N-way partition
// of the flat vector (whatever the stage), master weights and optimizer state.
struct ShardState {
  std::vector<Segment> segments;         // flat ranges, shard_offset into data
  std::vector<float> master;             // shard_size floats
  std::vector<std::vector<float>> state; // state_slots() x shard_size
};

// Fills `out` (reusing its buffers) with this rank's piece of the N-way
// `saved` partition, taken from what the rank holds under `owned` (a world-1
// partition in stage 0, the same N-way one otherwise): master(s) and
// state(k, s) point at owned segment s's master weights and state slot k.
template <typename MasterAt, typename StateAt>
void ExportShardFrom(const ZeroPartition& owned, const ZeroPartition& saved, int slots, MasterAt master,
                     StateAt state, ShardState* out);

// Whether a step needs the global gradient norm: for the clip, and for
// fp16's overflow check.
bool NeedsGradNorm(const ZeroOptions& options);

// The step's fate from the global sum of squares of the (still scaled)
// gradients (0 when the norm is not needed): fills `result` (loss scale,
// norm, skipped: fp16 lets the loss scaler decide and updates it, logged)
// and returns the factor every gradient is multiplied by in the update
// (1 / loss scale times the clip coefficient).
float DecideStep(const ZeroOptions& options, LossScaler& scaler, double sumsq, StepResult* result);

// Test samples per evaluation batch.
inline constexpr int kEvalBatch = 1000;

class Engine {
 public:
  virtual ~Engine() = default;

  // Initializes parameters from seed (identical on every rank; no comm).
  virtual void InitParams(uint64_t seed) = 0;

  // Forward + backward of one micro-batch (host memory), accumulating
  // gradients of sum(loss) / global_batch. `last` marks the last
  // micro-batch before Step. Returns the local loss/accuracy sums.
  virtual BatchStats MicroBatch(const float* x, const int32_t* y, int batch, int64_t global_batch,
                                bool last) = 0;

  // The same for samples indices[0..batch) of `data` (the trainer's way),
  // the batch's loss and accuracy added to what TakeTrainStats returns
  // instead of returned, so that an engine on a GPU need not wait for the
  // batch: this default gathers them into host memory and calls MicroBatch;
  // the device engine keeps the data set in GPU memory, gathers there and
  // keeps the sums there.
  virtual void MicroBatchSamples(const Dataset& data, const int64_t* indices, int batch, int64_t global_batch,
                                 bool last);
  // The loss and accuracy sums of every MicroBatchSamples since the last
  // call (the device engine waits for the GPU here, once).
  virtual BatchStats TakeTrainStats() { return std::exchange(train_stats_, {}); }

  // Reduces what is left, checks overflow, clips, updates, re-gathers params.
  virtual StepResult Step(float lr) = 0;

  // Loss and accuracy sums over test samples [lo, hi) with the current
  // compute parameters (collective in stage 3).
  virtual BatchStats EvaluateRange(const Dataset& test, int64_t lo, int64_t hi) = 0;

  // Full fp32 parameters as the model computes with them (collective in stage 3).
  virtual std::vector<float> GatherComputeParams() = 0;
  // Full fp32 master weights (collective for stages 1-3).
  virtual std::vector<float> GatherMasterParams() = 0;

  virtual MemoryReport Memory() const = 0;
  virtual int64_t applied_steps() const = 0;
  virtual LossScaler& loss_scaler() = 0;

  // Checkpoint support: this rank's piece (N-way partition) into `out`,
  // reusing its buffers; and loading from full vectors (any saved world size
  // or stage).
  virtual void ExportShardInto(ShardState* out) const = 0;
  ShardState ExportShard() const {
    ShardState s;
    ExportShardInto(&s);
    return s;
  }
  virtual void ImportFull(const std::vector<float>& master, const std::vector<std::vector<float>>& state,
                          int64_t applied_steps) = 0;

 private:
  std::vector<float> batch_x_;  // MicroBatchSamples' gathered batch
  std::vector<int32_t> batch_y_;
  BatchStats train_stats_;      // its sums since TakeTrainStats
};

template <typename MasterAt, typename StateAt>
void ExportShardFrom(const ZeroPartition& owned, const ZeroPartition& saved, int slots, MasterAt master,
                     StateAt state, ShardState* out) {
  out->segments = saved.owned();
  out->master.resize(saved.shard_size());
  out->state.resize(slots);
  for (auto& slot : out->state) slot.resize(saved.shard_size());
  for (size_t l = 0; l < saved.owned().size(); ++l) {
    const Segment& want = saved.Owned(static_cast<int>(l));
    const Segment& have = owned.Owned(static_cast<int>(l));
    // The saved piece lies within the owned one (equal unless stage 0).
    DS_CHECK(want.flat_offset >= have.flat_offset && want.flat_offset + want.len <= have.flat_offset + have.len);
    const size_t skip = want.flat_offset - have.flat_offset;
    const float* m = master(have) + skip;
    std::copy(m, m + want.len, out->master.begin() + want.shard_offset);
    for (int k = 0; k < slots; ++k) {
      const float* s = state(k, have) + skip;
      std::copy(s, s + want.len, out->state[k].begin() + want.shard_offset);
    }
  }
}

}  // namespace ds::rt
