#include "runtime/model/optimizer.h"

#include <cmath>

#include "runtime/numeric/elementwise.h"

namespace ds::rt {
namespace {

// Elementwise kernels, cloned for AVX-512 and AVX2 and picked at load time.
#define DS_KERNEL __attribute__((target_clones("avx512f", "avx2", "default")))

DS_KERNEL void AdamKernel(float* p, const float* g, float* m, float* v, size_t n, ew::AdamStep s) {
  for (size_t i = 0; i < n; ++i) ew::Adam(p[i], g[i], m[i], v[i], s);
}

DS_KERNEL void SgdMomentumKernel(float* p, const float* g, float* buf, size_t n, ew::SgdStep s) {
  for (size_t i = 0; i < n; ++i) ew::SgdMomentum(p[i], g[i], buf[i], s);
}

DS_KERNEL void SgdKernel(float* p, const float* g, size_t n, ew::SgdStep s) {
  for (size_t i = 0; i < n; ++i) ew::Sgd(p[i], g[i], s);
}

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& c) : c_(c) {}
  int state_slots() const override { return c_.momentum != 0.0 ? 1 : 0; }
  const OptimizerConfig& config() const override { return c_; }

  ew::OptimizerStep Plan(int64_t step, float lr, float grad_scale) const override {
    ew::OptimizerStep plan;
    plan.kind = c_.momentum != 0.0 ? ew::OptimizerStep::Kind::kSgdMomentum
                                   : ew::OptimizerStep::Kind::kSgd;
    plan.sgd = ew::SgdStep{lr,
                           static_cast<float>(c_.weight_decay),
                           static_cast<float>(c_.momentum),
                           1.0f - static_cast<float>(c_.dampening),
                           grad_scale,
                           step <= 1,
                           c_.nesterov};
    return plan;
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

  ew::OptimizerStep Plan(int64_t step, float lr, float grad_scale) const override {
    double bc1 = 1.0, bc2 = 1.0;
    if (c_.bias_correction) {
      bc1 = 1.0 - std::pow(c_.beta1, static_cast<double>(step));
      bc2 = 1.0 - std::pow(c_.beta2, static_cast<double>(step));
    }
    const float wd = static_cast<float>(c_.weight_decay);
    ew::OptimizerStep plan;
    plan.kind = ew::OptimizerStep::Kind::kAdam;
    plan.adam = ew::AdamStep{static_cast<float>(c_.beta1),
                             static_cast<float>(c_.beta2),
                             static_cast<float>(c_.eps),
                             decoupled_ ? 0.0f : wd,
                             decoupled_ ? 1.0f - lr * wd : 1.0f,
                             static_cast<float>(lr / bc1),
                             static_cast<float>(1.0 / std::sqrt(bc2)),
                             grad_scale};
    return plan;
  }

 private:
  OptimizerConfig c_;
  bool decoupled_ = true;
};

}  // namespace

void Optimizer::Step(float* p, const float* g, float* const* state, size_t n, int64_t step,
                     float lr, float grad_scale) const {
  const ew::OptimizerStep plan = Plan(step, lr, grad_scale);
  switch (plan.kind) {
    case ew::OptimizerStep::Kind::kSgd: SgdKernel(p, g, n, plan.sgd); return;
    case ew::OptimizerStep::Kind::kSgdMomentum: SgdMomentumKernel(p, g, state[0], n, plan.sgd); return;
    case ew::OptimizerStep::Kind::kAdam: AdamKernel(p, g, state[0], state[1], n, plan.adam); return;
  }
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config) {
  if (config.type == OptimizerType::kSgd) return std::make_unique<Sgd>(config);
  return std::make_unique<Adam>(config);
}

}  // namespace ds::rt
