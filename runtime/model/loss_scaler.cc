#include "runtime/model/loss_scaler.h"

#include <algorithm>
#include <cmath>

namespace ds::rt {

LossScaler::LossScaler(const LossScalerConfig& config) : config_(config) {
  state_.scale = config.dynamic ? std::ldexp(1.0, config.initial_scale_power)
                                : config.static_scale;
  state_.cur_hysteresis = std::max(1, config.hysteresis);
}

bool LossScaler::Update(bool overflow) {
  if (!config_.dynamic) {
    ++state_.cur_iter;
    return overflow;
  }
  const int hysteresis = std::max(1, config_.hysteresis);
  if (overflow) {
    if (hysteresis == 1 || state_.cur_hysteresis == 1) {
      state_.scale = std::max(state_.scale / 2.0, config_.min_scale);
    } else {
      --state_.cur_hysteresis;
    }
    state_.last_overflow_iter = state_.cur_iter;
  } else if ((state_.cur_iter - state_.last_overflow_iter) % std::max<int64_t>(1, config_.window) == 0) {
    state_.cur_hysteresis = hysteresis;
    state_.scale *= 2.0;
  }
  ++state_.cur_iter;
  return overflow;
}

}  // namespace ds::rt
