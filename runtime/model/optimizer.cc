#include "runtime/model/optimizer.h"

#include <cmath>

namespace ds::rt {
namespace {

// Elementwise kernels, cloned for AVX-512 and AVX2 and picked at load time.
#define DS_KERNEL __attribute__((target_clones("avx512f", "avx2", "default")))

DS_KERNEL void AdamKernel(float* p, const float* g, float* m, float* v, size_t n, float b1,
                          float b2, float eps, float l2, float decay, float step_size,
                          float inv_sqrt_bc2) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i] + l2 * p[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    const float denom = std::sqrt(v[i]) * inv_sqrt_bc2 + eps;
    p[i] = p[i] * decay - step_size * m[i] / denom;
  }
}

DS_KERNEL void SgdMomentumKernel(float* p, const float* g, float* buf, size_t n, float lr,
                                 float wd, float mom, float damp, bool first, bool nesterov) {
  for (size_t i = 0; i < n; ++i) {
    const float d = g[i] + wd * p[i];
    const float b = first ? d : mom * buf[i] + damp * d;
    buf[i] = b;
    p[i] -= lr * (nesterov ? d + mom * b : b);
  }
}

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& c) : c_(c) {}
  int state_slots() const override { return c_.momentum != 0.0 ? 1 : 0; }
  const OptimizerConfig& config() const override { return c_; }

  void Step(float* p, const float* g, float* const* state, size_t n, int64_t step,
            float lr) const override {
    const float wd = static_cast<float>(c_.weight_decay);
    const float mom = static_cast<float>(c_.momentum);
    const float damp = 1.0f - static_cast<float>(c_.dampening);
    if (mom == 0.0f) {
      for (size_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
      return;
    }
    SgdMomentumKernel(p, g, state[0], n, lr, wd, mom, damp, step <= 1, c_.nesterov);
  }

 private:
  OptimizerConfig c_;
};

class Adam final : public Optimizer {
 public:
  explicit Adam(const OptimizerConfig& c) : c_(c) {
    decoupled_ = c.type == OptimizerType::kAdamW || c.adam_w_mode;
  }
  int state_slots() const override { return 2; }
  const OptimizerConfig& config() const override { return c_; }

  void Step(float* p, const float* g, float* const* state, size_t n, int64_t step,
            float lr) const override {
    const float b1 = static_cast<float>(c_.beta1), b2 = static_cast<float>(c_.beta2);
    const float eps = static_cast<float>(c_.eps), wd = static_cast<float>(c_.weight_decay);
    double bc1 = 1.0, bc2 = 1.0;
    if (c_.bias_correction) {
      bc1 = 1.0 - std::pow(c_.beta1, static_cast<double>(step));
      bc2 = 1.0 - std::pow(c_.beta2, static_cast<double>(step));
    }
    const float step_size = static_cast<float>(lr / bc1);
    const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    const float decay = decoupled_ ? 1.0f - lr * wd : 1.0f;
    const float l2 = decoupled_ ? 0.0f : wd;
    AdamKernel(p, g, state[0], state[1], n, b1, b2, eps, l2, decay, step_size, inv_sqrt_bc2);
  }

 private:
  OptimizerConfig c_;
  bool decoupled_ = true;
};

}  // namespace

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config) {
  if (config.type == OptimizerType::kSgd) return std::make_unique<Sgd>(config);
  return std::make_unique<Adam>(config);
}

}  // namespace ds::rt
