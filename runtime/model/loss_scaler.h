// LossScaler: DeepSpeed's fp16 loss scaling. Static (loss_scale > 0) or
// dynamic (loss_scale == 0): start at 2^initial_scale_power; on overflow the
// step is skipped and, once `hysteresis` overflows have been absorbed, the
// scale halves (never below min_loss_scale); after loss_scale_window steps
// without overflow it doubles and hysteresis is restored. Mirrors
// DeepSpeed's DynamicLossScaler (consecutive_hysteresis = false). Value type,
// not thread-safe; state() / Restore() for checkpoints.
#pragma once

#include <cstdint>
#include "runtime/config/training_options.h"

namespace ds::rt {

struct LossScalerState {
  double scale = 1.0;
  int cur_hysteresis = 1;
  int64_t cur_iter = 0;
  int64_t last_overflow_iter = -1;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& config = {});

  // The factor to multiply the loss (grad_scale) by this step.
  double scale() const { return state_.scale; }

  // Records this step's outcome. Returns true if the step must be skipped
  // (overflow), false if the optimizer may step. Static scaling also skips
  // overflowing steps but never changes the scale.
  bool Update(bool overflow);

  const LossScalerState& state() const { return state_; }
  void Restore(const LossScalerState& state) { state_ = state; }
  const LossScalerConfig& config() const { return config_; }

 private:
  LossScalerConfig config_;
  LossScalerState state_;
};

}  // namespace ds::rt
