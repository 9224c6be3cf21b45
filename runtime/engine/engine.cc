#include "runtime/engine/engine.h"

#include <cmath>
#include <cstring>

#include "common/log.h"

namespace ds::rt {

// Mixed-precision Adam (b = 2, K = 12: fp32 master + m + v) gives 16Ψ,
// 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N. In fp32 the parameters are their own master
// copy: b = 4, K = 4 * slots.
double ZeroMemoryFormula(int stage, bool half, int state_slots, double psi, int n) {
  const double b = half ? 2 : 4;
  const double k = 4.0 * state_slots + (half ? 4 : 0);
  switch (stage) {
    case 0: return (2 * b + k) * psi;
    case 1: return 2 * b * psi + k * psi / n;
    case 2: return b * psi + (b + k) * psi / n;
    default: return (2 * b + k) * psi / n;
  }
}

void Engine::MicroBatchSamples(const Dataset& data, const int64_t* indices, int batch, int64_t global_batch,
                               bool last) {
  const size_t f = static_cast<size_t>(data.features);
  batch_x_.resize(static_cast<size_t>(batch) * f);
  batch_y_.resize(batch);
  for (int i = 0; i < batch; ++i) {
    std::memcpy(batch_x_.data() + i * f, data.sample(indices[i]), f * sizeof(float));
    batch_y_[i] = data.y[indices[i]];
  }
  train_stats_ += MicroBatch(batch_x_.data(), batch_y_.data(), batch, global_batch, last);
}

bool NeedsGradNorm(const ZeroOptions& options) {
  return options.gradient_clipping > 0 || options.precision == Precision::kFp16;
}

float DecideStep(const ZeroOptions& options, LossScaler& scaler, double sumsq, StepResult* result) {
  const bool fp16 = options.precision == Precision::kFp16;
  result->loss_scale = fp16 ? scaler.scale() : 1.0;
  if (NeedsGradNorm(options)) result->grad_norm = std::sqrt(sumsq) / result->loss_scale;
  const bool overflow = !std::isfinite(result->grad_norm);
  result->skipped = fp16 ? scaler.Update(overflow) : overflow;
  if (result->skipped) {
    DS_LOG(Info, Train) << "step skipped: gradient overflow (loss scale " << result->loss_scale << ")";
    return 0.0f;
  }
  double coef = 1.0;
  if (options.gradient_clipping > 0 && result->grad_norm > options.gradient_clipping)
    coef = options.gradient_clipping / (result->grad_norm + 1e-6);
  return static_cast<float>(coef / result->loss_scale);
}

}  // namespace ds::rt
