// The per-element math of training, written once for the CPU loops and the
// CUDA kernels (docs/gpu.md): activations and their derivatives, the optimizer
// updates (torch.optim semantics, runtime/model/optimizer.h). Each function is DS_HD: __host__
// __device__ under nvcc, plain inline elsewhere, so the CPU tests exercise
// the same formulas in the same order as a kernel. Not the same bits in
// every case: the kernels are built without FMA contraction (-fmad=false,
// runtime/device/CMakeLists.txt) and the CPU build does not contract for
// x86-64's baseline (a -march with FMA would), so +, *, / and sqrtf round
// alike on both sides; but erff and expf (GELU) are each side's own library
// functions and may differ by an ulp or so. Only <cmath>'s float functions
// (erff, expf, sqrtf), which exist on both sides. Header-only, pure.
#pragma once

#include <cmath>

#include "runtime/numeric/host_device.h"

namespace ds::rt::ew {

inline constexpr float kInvSqrt2 = 0.70710678118654752f;
inline constexpr float kInvSqrt2Pi = 0.39894228040143268f;

DS_HD float Relu(float z) { return z > 0.0f ? z : 0.0f; }
// d(loss)/d(z) from d(loss)/d(relu(z)) = `d`, given the activation a = relu(z).
DS_HD float ReluBackward(float a, float d) { return a > 0.0f ? d : 0.0f; }

// GELU, the erf form (PyTorch's default, approximate='none').
DS_HD float Gelu(float x) { return 0.5f * x * (1.0f + erff(x * kInvSqrt2)); }
DS_HD float GeluGrad(float x) { return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * expf(-0.5f * x * x); }

// One sample's softmax cross-entropy over C logits z, stable: returns
// logsumexp(z) - z[label] (in double, as the loss is summed in double) and
// sets *correct when the first maximum is at `label`. When `d` is set it
// receives grad_scale * (softmax(z) - onehot(label)), the gradient of
// grad_scale * loss with respect to z.
DS_HD double SoftmaxXent(const float* z, int C, int label, float grad_scale, float* d,
                         bool* correct) {
  int arg = 0;
  for (int c = 1; c < C; ++c)
    if (z[c] > z[arg]) arg = c;
  const float zmax = z[arg];
  double sum = 0;
  for (int c = 0; c < C; ++c) sum += exp(static_cast<double>(z[c] - zmax));
  const double lse = log(sum) + zmax;
  *correct = arg == label;
  if (d) {
    for (int c = 0; c < C; ++c) d[c] = grad_scale * static_cast<float>(exp(static_cast<double>(z[c]) - lse));
    d[label] -= grad_scale;
  }
  return lse - z[label];
}

// The optimizer updates. Every one first multiplies the gradient by
// `gscale`: 1 / loss scale, times the clip coefficient (one pass over the
// gradients instead of three, as DeepSpeed's fused optimizers do).

// One Adam/AdamW step's constants (optimizer.cc derives them from the
// config, the step and the learning rate): l2 = weight decay added to the
// gradient (Adam), decay = 1 - lr*wd applied to the parameter (AdamW).
struct AdamStep {
  float b1, b2, eps, l2, decay, step_size, inv_sqrt_bc2, gscale;
};
DS_HD void Adam(float& p, float g, float& m, float& v, const AdamStep& s) {
  const float gi = g * s.gscale + s.l2 * p;
  m = s.b1 * m + (1.0f - s.b1) * gi;
  v = s.b2 * v + (1.0f - s.b2) * gi * gi;
  const float denom = sqrtf(v) * s.inv_sqrt_bc2 + s.eps;
  p = p * s.decay - s.step_size * m / denom;
}

// SGD: damp = 1 - dampening; `first` on the first step (the momentum
// buffer starts as the gradient).
struct SgdStep {
  float lr, wd, mom, damp, gscale;
  bool first, nesterov;
};
DS_HD void SgdMomentum(float& p, float g, float& buf, const SgdStep& s) {
  const float d = g * s.gscale + s.wd * p;
  const float b = s.first ? d : s.mom * buf + s.damp * d;
  buf = b;
  p -= s.lr * (s.nesterov ? d + s.mom * b : b);
}
// Plain SGD (momentum 0: no buffer).
DS_HD void Sgd(float& p, float g, const SgdStep& s) { p -= s.lr * (g * s.gscale + s.wd * p); }

// One optimizer step as data, for the host loops and the device kernels
// alike (Optimizer::Plan): which update, and its constants.
struct OptimizerStep {
  enum class Kind { kSgd, kSgdMomentum, kAdam };
  Kind kind = Kind::kSgd;
  SgdStep sgd{};
  AdamStep adam{};
};

}  // namespace ds::rt::ew
