// Optimizers as elementwise kernels on a contiguous shard: the optimizer owns
// no state; the caller (ZeRO engine) owns state_slots() arrays of n floats per
// shard, zero-initialized, and passes them to Step. That makes partitioning
// trivial: every rank steps its own shard. Optimizer objects are immutable
// after creation and thread-safe.
//
// Semantics follow torch.optim (which DeepSpeed uses for these types):
//  SGD: g += wd*p; buf = (step==1 ? g : momentum*buf + (1-dampening)*g);
//       g = nesterov ? g + momentum*buf : buf; p -= lr*g.
//  Adam (L2, adam_w_mode=false): g += wd*p, then the Adam update.
//  AdamW / Adam with adam_w_mode=true (DeepSpeed's default for "Adam"):
//       p *= 1 - lr*wd, then m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//       p -= lr * (m/(1-b1^t)) / (sqrt(v)/sqrt(1-b2^t) + eps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include "runtime/config/training_options.h"
#include "runtime/numeric/elementwise.h"

namespace ds::rt {

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Number of float arrays of state per parameter (SGD 1 if momentum else 0,
  // Adam 2: exp_avg, exp_avg_sq).
  virtual int state_slots() const = 0;

  // The constants of one update (elementwise.h): what Step runs here and the
  // device kernels run on the GPU. `step` is the 1-based count of applied
  // (non-skipped) steps including this one; `lr` the learning rate for this
  // step; every gradient is first multiplied by `grad_scale` (1 / loss scale
  // times the clip coefficient).
  virtual ew::OptimizerStep Plan(int64_t step, float lr, float grad_scale = 1.0f) const = 0;

  // One update of n parameters with their gradients (averaged, still
  // carrying grad_scale's inverse). `state[i]` are the state_slots() arrays
  // for this shard.
  void Step(float* params, const float* grads, float* const* state, size_t n, int64_t step,
            float lr, float grad_scale = 1.0f) const;

  virtual const OptimizerConfig& config() const = 0;
};

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config);

}  // namespace ds::rt
