// Mlp: forward/backward layer by layer; matrix products through OpenBLAS
// (cblas_sgemm), chosen by measurement (bench/results/gemm.md).
// The per-element math (GELU, the erf form, ReLU, softmax cross-entropy) is
// runtime/numeric/elementwise.h.
#include "runtime/model/model.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/check.h"
#include "runtime/model/blas.h"
#include "runtime/numeric/elementwise.h"
#include "runtime/numeric/rng.h"

namespace ds::rt {
namespace {

// y (rows x out) = x (rows x in) * W^T + b, W row-major (out x in).
void Linear(const float* x, const float* w, const float* b, float* y, int rows, int in, int out) {
  for (int r = 0; r < rows; ++r) std::copy(b, b + out, y + static_cast<size_t>(r) * out);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, x, in, w, in, 1.0f,
              y, out);
}

// Grows a scratch buffer to at least n floats; never shrinks it, so buffers
// reused for layers of different sizes are not zero-filled on every call.
float* Scratch(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

Mlp::Mlp(MlpConfig config) : config_(std::move(config)) {
  ConfigureBlasThreadsOnce();
  DS_CHECK_MSG(config_.sizes.size() >= 2, "an Mlp needs an input and an output size");
  size_t offset = 0;
  for (size_t l = 0; l + 1 < config_.sizes.size(); ++l) {
    LayerShape s;
    s.in = config_.sizes[l];
    s.out = config_.sizes[l + 1];
    DS_CHECK(s.in > 0 && s.out > 0);
    s.offset = offset;
    offset += s.size();
    layers_.push_back(s);
  }
  num_params_ = offset;
  acts_.resize(layers_.size() + 1);
  pre_.resize(layers_.size());
}

size_t Mlp::num_params() const { return num_params_; }
int Mlp::num_layers() const { return static_cast<int>(layers_.size()); }
const LayerShape& Mlp::layer(int l) const { return layers_.at(l); }
const MlpConfig& Mlp::config() const { return config_; }

void Mlp::Init(float* params, uint64_t seed) const {
  Rng rng(seed);
  for (const LayerShape& s : layers_) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(s.in));
    float* p = params + s.offset;
    for (size_t i = 0; i < s.size(); ++i) p[i] = static_cast<float>(rng.Uniform(-bound, bound));
  }
}

double Mlp::FlopsPerSample() const {
  double macs = 0;
  for (int l = 0; l < num_layers(); ++l) {
    const double m = static_cast<double>(layers_[l].in) * layers_[l].out;
    macs += 2 * m;               // forward + weight gradient
    if (l > 0) macs += m;        // input gradient (not needed for the data)
  }
  return 2 * macs;
}

// Runs the forward pass, leaving layer inputs in acts_, pre-activations in
// pre_ (GELU only) and logits in pre_.back(). Returns the loss statistics;
// when `dlogits` is set, also writes grad_scale * d(sum loss)/d(logits).
BatchStats Mlp::Forward(ParamSource& params, const float* x, const int32_t* y, int batch,
                        float grad_scale, std::vector<float>* dlogits) {
  const int L = num_layers();
  const bool gelu = config_.activation == Activation::kGelu;
  const float* in = x;
  for (int l = 0; l < L; ++l) {
    const LayerShape& s = layers_[l];
    const size_t n_out = static_cast<size_t>(batch) * s.out;
    float* z = Scratch(pre_[l], n_out);
    const float* w = params.Acquire(l);
    Linear(in, w, w + static_cast<size_t>(s.in) * s.out, z, batch, s.in, s.out);
    params.Release(l);
    if (l + 1 < L) {
      float* a = Scratch(acts_[l + 1], n_out);
      if (gelu) {
        for (size_t i = 0; i < n_out; ++i) a[i] = ew::Gelu(z[i]);
      } else {
        for (size_t i = 0; i < n_out; ++i) a[i] = ew::Relu(z[i]);
      }
      in = a;
    }
  }

  // Softmax cross-entropy (elementwise.h), one sample at a time.
  const int C = layers_.back().out;
  const float* logits = pre_.back().data();
  float* dl = dlogits ? Scratch(*dlogits, static_cast<size_t>(batch) * C) : nullptr;
  BatchStats st;
  st.count = batch;
  for (int r = 0; r < batch; ++r) {
    DS_CHECK(y[r] >= 0 && y[r] < C);
    bool correct = false;
    st.loss_sum += ew::SoftmaxXent(logits + static_cast<size_t>(r) * C, C, y[r], grad_scale,
                                   dl ? dl + static_cast<size_t>(r) * C : nullptr, &correct);
    st.correct += correct;
  }
  return st;
}

BatchStats Mlp::ForwardBackward(ParamSource& params, const float* x, const int32_t* y, int batch,
                                float grad_scale, GradSink& grads) {
  const BatchStats st = Forward(params, x, y, batch, grad_scale, &dcur_);
  const bool gelu = config_.activation == Activation::kGelu;
  for (int l = num_layers() - 1; l >= 0; --l) {
    const LayerShape& s = layers_[l];
    const float* in = l == 0 ? x : acts_[l].data();
    float* target = grads.AccumulateInto(l);
    float* dw = target ? target : Scratch(gradbuf_, s.size());
    float* db = dw + static_cast<size_t>(s.in) * s.out;
    // dW (out x in) = dZ^T (out x batch) * X (batch x in); db = column sums of dZ.
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.out, s.in, batch, 1.0f, dcur_.data(),
                s.out, in, s.in, target ? 1.0f : 0.0f, dw, s.in);
    if (!target) std::fill(db, db + s.out, 0.0f);
    for (int r = 0; r < batch; ++r) {
      const float* d = dcur_.data() + static_cast<size_t>(r) * s.out;
      for (int o = 0; o < s.out; ++o) db[o] += d[o];
    }
    if (l > 0) {
      // dX (batch x in) = dZ (batch x out) * W (out x in), then through the activation.
      const float* w = params.Acquire(l);
      const size_t n = static_cast<size_t>(batch) * s.in;
      float* dx = Scratch(dprev_, n);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, s.in, s.out, 1.0f,
                  dcur_.data(), s.out, w, s.in, 0.0f, dx, s.in);
      params.Release(l);
      if (gelu) {
        const float* z = pre_[l - 1].data();
        for (size_t i = 0; i < n; ++i) dx[i] *= ew::GeluGrad(z[i]);
      } else {
        const float* a = acts_[l].data();
        for (size_t i = 0; i < n; ++i) dx[i] = ew::ReluBackward(a[i], dx[i]);
      }
    }
    grads.LayerGrad(l, dw, s.size());
    std::swap(dcur_, dprev_);
  }
  return st;
}

BatchStats Mlp::Evaluate(ParamSource& params, const float* x, const int32_t* y, int batch) {
  return Forward(params, x, y, batch, 0.0f, nullptr);
}

}  // namespace ds::rt
