#include "runtime/model/scheduler.h"

#include <algorithm>
#include <cmath>

namespace ds::rt {
namespace {

// DeepSpeed's warmup gamma in [0, 1) while it < W.
double WarmupGamma(const SchedulerConfig& c, int64_t it, int64_t w) {
  if (c.warmup_type == "linear") return static_cast<double>(it) / static_cast<double>(w);
  return std::log(static_cast<double>(it + 1)) / std::log(static_cast<double>(w));
}

}  // namespace

double LearningRate(const SchedulerConfig& c, double base_lr, int64_t it) {
  if (it < 0) it = 0;
  const int64_t w = std::max<int64_t>(2, c.warmup_num_steps);
  switch (c.type) {
    case SchedulerType::kNone:
      return base_lr;
    case SchedulerType::kWarmupLR: {
      const double gamma = it < w ? WarmupGamma(c, it, w) : 1.0;
      return c.warmup_min_lr + (c.warmup_max_lr - c.warmup_min_lr) * gamma;
    }
    case SchedulerType::kWarmupDecayLR: {
      double gamma;
      if (it < w) {
        gamma = WarmupGamma(c, it, w);
      } else {
        gamma = std::max(0.0, static_cast<double>(c.total_num_steps - it) /
                                  std::max(1.0, static_cast<double>(c.total_num_steps - w)));
      }
      return c.warmup_min_lr + (c.warmup_max_lr - c.warmup_min_lr) * gamma;
    }
    case SchedulerType::kWarmupCosineLR: {
      if (it < w) {
        const double gamma = WarmupGamma(c, it, w);
        return base_lr * (c.warmup_min_ratio + (1.0 - c.warmup_min_ratio) * gamma);
      }
      const int64_t last = std::min(it, c.total_num_steps);
      const double real_last = static_cast<double>(last - w + 1);
      const double real_total = std::max(1.0, static_cast<double>(c.total_num_steps - w));
      const double cosv = (1.0 + std::cos(M_PI * std::min(1.0, real_last / real_total))) / 2.0;
      return base_lr * std::max(0.0, c.cos_min_ratio + (1.0 - c.cos_min_ratio) * cosv);
    }
  }
  return base_lr;
}

const char* SchedulerTypeName(SchedulerType type) {
  switch (type) {
    case SchedulerType::kNone: return "none";
    case SchedulerType::kWarmupLR: return "WarmupLR";
    case SchedulerType::kWarmupDecayLR: return "WarmupDecayLR";
    case SchedulerType::kWarmupCosineLR: return "WarmupCosineLR";
  }
  return "?";
}

}  // namespace ds::rt
