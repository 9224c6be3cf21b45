// The per-element math of training, written once for the CPU loops and the
// CUDA kernels (issue 13): activations and their derivatives, the optimizer
// updates (torch.optim semantics, runtime/model/optimizer.h). Each function is DS_HD: __host__
// __device__ under nvcc, plain inline elsewhere, so the CPU tests exercise
// exactly what a kernel runs. Only <cmath>'s float functions (erff, expf,
// sqrtf), which exist on both sides. Header-only, pure.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define DS_HD __host__ __device__ __forceinline__
#else
#define DS_HD inline
#endif

namespace ds::rt::ew {

inline constexpr float kInvSqrt2 = 0.70710678118654752f;
inline constexpr float kInvSqrt2Pi = 0.39894228040143268f;

DS_HD float Relu(float z) { return z > 0.0f ? z : 0.0f; }
// d(loss)/d(z) from d(loss)/d(relu(z)) = `d`, given the activation a = relu(z).
DS_HD float ReluBackward(float a, float d) { return a > 0.0f ? d : 0.0f; }

// GELU, the erf form (PyTorch's default, approximate='none').
DS_HD float Gelu(float x) { return 0.5f * x * (1.0f + erff(x * kInvSqrt2)); }
DS_HD float GeluGrad(float x) { return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * expf(-0.5f * x * x); }

// One Adam/AdamW step's constants (optimizer.cc derives them from the
// config, the step and the learning rate): l2 = weight decay added to the
// gradient (Adam), decay = 1 - lr*wd applied to the parameter (AdamW).
struct AdamStep {
  float b1, b2, eps, l2, decay, step_size, inv_sqrt_bc2;
};
DS_HD void Adam(float& p, float g, float& m, float& v, const AdamStep& s) {
  const float gi = g + s.l2 * p;
  m = s.b1 * m + (1.0f - s.b1) * gi;
  v = s.b2 * v + (1.0f - s.b2) * gi * gi;
  const float denom = sqrtf(v) * s.inv_sqrt_bc2 + s.eps;
  p = p * s.decay - s.step_size * m / denom;
}

// SGD with momentum: damp = 1 - dampening; `first` on the first step (the
// buffer starts as the gradient).
struct SgdStep {
  float lr, wd, mom, damp;
  bool first, nesterov;
};
DS_HD void SgdMomentum(float& p, float g, float& buf, const SgdStep& s) {
  const float d = g + s.wd * p;
  const float b = s.first ? d : s.mom * buf + s.damp * d;
  buf = b;
  p -= s.lr * (s.nesterov ? d + s.mom * b : b);
}
// Plain SGD (no momentum).
DS_HD void Sgd(float& p, float g, float lr, float wd) { p -= lr * (g + wd * p); }

}  // namespace ds::rt::ew
